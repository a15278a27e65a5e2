# A stand-in for a training program under dtcrun: what it does is chosen by
# its arguments, and it reports what it sees.
#   env                  print the launcher variables on one line
#   lines N WIDTH        print N lines of WIDTH characters to stdout and stderr
#   mixed                stdout and stderr lines, one without a final newline
#   progress             a progress bar redrawn with \r, then a normal line
#   barbreak             a line on stderr while a progress bar is mid-line
#   fail RANK CODE [ignore-term|early-zero]
#                        that rank exits with CODE after the others are waiting
#                        (early-zero: rank 0 exits 0 first, at once)
#   kill RANK            that rank kills itself with SIGKILL
#   wait [ignore-term]   print "ready", then wait for a signal and report it
#                        (ignore-term: SIGTERM is ignored; only SIGKILL stops it)
#   rendezvous DIR       wait until WORLD_SIZE ranks (over all nodes) are up
#   restarts RANK N      print TORCHELASTIC_RESTART_COUNT/_MAX_RESTARTS; that
#                        rank fails (exit 1) while fewer than N restarts were
#                        made, the others wait to be stopped; then all exit 0
#   stopped              exit 75 (a rank that stopped early on a signal)
import os
import signal
import sys
import time

rank = int(os.environ.get("RANK", "-1"))
mode = sys.argv[1]


def say(text, stream=sys.stdout):
    # os.write, not print: unbuffered, so each line reaches dtcrun whole and
    # at once, whatever happens to the process next.
    os.write(stream.fileno(), (text + "\n").encode())


# Ranks of one dtcrun share its pid as their parent: a folder named after it
# holds a marker per rank whose signal handlers are installed, so a rank
# that must fail or die "after the others are waiting" waits for those
# markers (bounded) instead of sleeping and hoping.
def _parent_start_time():
    with open("/proc/%d/stat" % os.getppid()) as f:
        return f.read().rsplit(")", 1)[1].split()[19]  # field 22: start time


READY_DIR = "/tmp/dtcrun-test-ready-%d-%s" % (os.getppid(), _parent_start_time())


def mark_ready():
    # The marker holds the rank's pid, written under another name and renamed
    # so that a reader never sees it empty. A rank that has finished removes
    # the folder when its marker was the last one (unmark_ready), possibly
    # while this rank is creating it or writing into it: then start again.
    path = os.path.join(READY_DIR, str(rank))
    while True:
        try:
            os.makedirs(READY_DIR, exist_ok=True)
            with open(path + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.rename(path + ".tmp", path)
            return
        except (FileExistsError, FileNotFoundError):
            continue


def wait_until_collected(other):
    # Until dtcrun has collected rank `other`'s exit: a process's /proc entry
    # stays (as a zombie) until its parent waits for it.
    with open(os.path.join(READY_DIR, str(other))) as f:
        pid = int(f.read())
    deadline = time.monotonic() + 30
    while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def unmark_ready():
    try:
        os.unlink(os.path.join(READY_DIR, str(rank)))
        os.rmdir(READY_DIR)
    except OSError:
        pass  # another rank's marker is still there, or already gone


def wait_for_others():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    deadline = time.monotonic() + 30
    while True:
        ready = set(f for f in os.listdir(READY_DIR) if not f.endswith(".tmp")) \
            if os.path.isdir(READY_DIR) else set()
        if len(ready - {str(rank)}) >= world - 1 or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def wait_for_signal(ignore_term=False):
    # The signals are blocked, then awaited with sigtimedwait. A Python
    # handler plus time.sleep would race: Python runs handlers between
    # bytecodes, so a signal landing after the last check but before the
    # sleep's system call starts leaves the rank asleep (seen under load).
    awaited = {signal.SIGINT} if ignore_term else {signal.SIGINT, signal.SIGTERM}
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, awaited)
    # Marked before saying so: the test signals once every rank said it, and
    # a signalled rank removes its marker (and the folder, if it is empty).
    mark_ready()
    say("rank %d ready" % rank)
    info = signal.sigtimedwait(awaited, 50)  # the tests' `timeout 60` is the backstop
    if info is None:
        say("rank %d was never stopped" % rank)
        sys.exit(5)
    say("rank %d got %s" % (rank, signal.Signals(info.si_signo).name))
    unmark_ready()
    sys.exit(0 if info.si_signo == signal.SIGTERM else 1)


if mode == "env":
    names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
             "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME",
             "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
             "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES"]
    say(" ".join("%s=%s" % (n, os.environ.get(n, "<unset>")) for n in names))
    # The default thread count is the cores this process may use over N.
    n = int(os.environ["LOCAL_WORLD_SIZE"])
    expected = max(1, len(os.sched_getaffinity(0)) // n)
    say("threads-default=%s" % ("yes" if os.environ["OMP_NUM_THREADS"] == str(expected) else "no"))
    say("args=%s" % " ".join(sys.argv[2:]))
elif mode == "lines":
    count, width = int(sys.argv[2]), int(sys.argv[3])
    text = (chr(ord("a") + rank % 26)) * width
    for i in range(count):
        # Unbuffered pieces so that a line reaches dtcrun in several reads.
        os.write(1, text[: width // 2].encode())
        os.write(1, (text[width // 2:] + "\n").encode())
        os.write(2, (text.upper() + "\n").encode())
elif mode == "mixed":
    say("out one")
    say("err one", sys.stderr)
    say("out two")
    os.write(1, b"no newline at the end")
elif mode == "progress":
    for i in range(1, 4):
        os.write(1, b"\rstep %d/3" % i)
        time.sleep(0.05)
    os.write(1, b"\n")
    say("done %d" % rank)
    os.write(1, b"crlf %d\r\n" % rank)
elif mode == "barbreak":
    os.write(1, b"\rstep 1")
    time.sleep(0.3)
    os.write(2, b"note\n")
    time.sleep(0.3)
    os.write(1, b"\rstep 2\n")
elif mode == "fail":
    option = sys.argv[4] if len(sys.argv) > 4 else ""
    if rank == int(sys.argv[2]):
        wait_for_others()  # their handlers are installed
        if option == "early-zero":
            wait_until_collected(0)  # dtcrun must count rank 0 as finished
        say("rank %d failing" % rank, sys.stderr)
        sys.exit(int(sys.argv[3]))
    if option == "early-zero" and rank == 0:
        mark_ready()  # counts as waiting: the failing rank need not wait for it
        sys.exit(0)
    wait_for_signal(ignore_term=option == "ignore-term")
elif mode == "kill":
    if rank == int(sys.argv[2]):
        wait_for_others()
        os.kill(os.getpid(), signal.SIGKILL)
    wait_for_signal()
elif mode == "wait":
    wait_for_signal(ignore_term=len(sys.argv) > 2 and sys.argv[2] == "ignore-term")
elif mode == "rendezvous":
    directory = sys.argv[2]
    world = int(os.environ["WORLD_SIZE"])
    open(os.path.join(directory, "up-%d" % rank), "w").close()
    deadline = time.time() + 30
    while len([f for f in os.listdir(directory) if f.startswith("up-")]) < world:
        if time.time() > deadline:
            say("rank %d: only some of %d ranks came up" % (rank, world))
            sys.exit(1)
        time.sleep(0.05)
    say("rank %d of %d: all up (node %s)" % (rank, world, os.environ["GROUP_RANK"]))
elif mode == "restarts":
    count = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    say("rank %d restart %d of %s" % (rank, count, os.environ["TORCHELASTIC_MAX_RESTARTS"]))
    if count < int(sys.argv[3]):
        if rank == int(sys.argv[2]):
            wait_for_others()
            sys.exit(1)
        wait_for_signal()
elif mode == "stopped":
    sys.exit(75)
else:
    sys.exit("rank.py: unknown mode " + mode)
