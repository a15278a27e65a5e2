# Starts `dtcrun ARGS...` whose ranks print "ready" lines, waits until all
# EXPECTED ranks are ready, sends SIGNAL to dtcrun (only to it, not to its
# process group), then passes dtcrun's output through and prints its status.
#   send_signal.py SIGNAL EXPECTED dtcrun ARGS...
import signal
import subprocess
import sys
import time

sig = getattr(signal, sys.argv[1])
expected = int(sys.argv[2])
proc = subprocess.Popen(sys.argv[3:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        text=True)
ready = 0
lines = []
while ready < expected:
    line = proc.stdout.readline()
    if not line:
        break
    lines.append(line)
    ready += line.rstrip().endswith("ready")
start = time.time()
proc.send_signal(sig)
rest = proc.stdout.read()
status = proc.wait()
sys.stdout.write("".join(lines) + rest)
print("exit=%d" % status)
print("stopped-within-5s=%s" % ("yes" if time.time() - start < 5 else "no"))
