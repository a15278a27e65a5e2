# Runs COMMAND (its stdout and stderr merged and passed through) until a
# line says "paused after step N (pid P)" (DTC_TEST_FAULT=pause:...), then
# signals it, and prints "exit=STATUS" at the end (128+signal when killed).
#   signal_on_pause.py ACTION COMMAND...
# ACTION: term-launcher  SIGTERM to COMMAND's process (dtcrun or the program)
#         int-launcher   SIGINT to it
#         term-paused    SIGTERM to the paused process P only
#         two-signals    SIGSTOP, SIGINT, SIGTERM, SIGCONT to P: both signals
#                        are pending together, so the second arrives while
#                        the first is being handled, deterministically
import os
import re
import signal
import subprocess
import sys

action = sys.argv[1]
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sent = False
for raw in proc.stdout:
    line = raw.decode(errors="replace")
    sys.stdout.write(line)
    sys.stdout.flush()
    m = re.search(r"paused after step \d+ \(pid (\d+)\)", line)
    if m and not sent:
        sent = True
        paused = int(m.group(1))
        if action == "term-launcher":
            proc.send_signal(signal.SIGTERM)
        elif action == "int-launcher":
            proc.send_signal(signal.SIGINT)
        elif action == "term-paused":
            os.kill(paused, signal.SIGTERM)
        elif action == "two-signals":
            os.kill(paused, signal.SIGSTOP)
            os.kill(paused, signal.SIGINT)
            os.kill(paused, signal.SIGTERM)
            os.kill(paused, signal.SIGCONT)
        else:
            sys.exit("signal_on_pause.py: unknown action " + action)
status = proc.wait()
print("exit=%d" % (128 - status if status < 0 else status))
if not sent:
    print("never paused")
