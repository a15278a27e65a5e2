#!/usr/bin/python3
"""hostile_client.py MODE PROGRAM [ARGS...]: a 2-rank job of PROGRAM on a free
loopback port with a job secret, and a hostile process against rank 0's
store after rank 0 is up and before rank 1 starts (rank 1 starts late):

  foreign   another copy of PROGRAM as rank 1 without the secret tries to join
  oversize  a client sends the length prefix 0xFFFFFFF0, then streams data
  halfopen  100 connections that never say a word stay open while the job
            runs; rank 0 runs with a low open-file limit (--nofile=N)
  secondjob another job (dtcrun, 2 ranks, its own secret) on the same port

Prints one line per finding, then each process's output prefixed with its
name, then "rank0 exit=N" / "rank1 exit=N". Every wait is a bounded poll;
nothing depends on a sleep for correctness."""
import os
import resource
import secrets
import socket
import struct
import subprocess
import sys
import time

mode = sys.argv[1]
args = sys.argv[2:]
nofile = None
if args and args[0].startswith("--nofile="):
    nofile = int(args[0].split("=", 1)[1])
    args = args[1:]

with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
secret = secrets.token_hex(32)


def rank_env(rank, with_secret=True):
    env = dict(os.environ)
    for k in ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "DTC_JOB_SECRET"]:
        env.pop(k, None)
    env.update(RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if with_secret:
        env["DTC_JOB_SECRET"] = secret
    return env


def start(rank, with_secret=True, limit=None):
    def lower_limit():
        if limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return subprocess.Popen(args, env=rank_env(rank, with_secret), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=lower_limit)


def wait_listening(deadline):
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)  # polling interval only
    return False


def connect():
    c = socket.create_connection(("127.0.0.1", port), timeout=10)
    return c


rank0 = start(0, limit=nofile)
if not wait_listening(time.monotonic() + 60):
    print("rank 0 never listened on its port")
    rank0.kill()
    sys.exit(1)

held = []
if mode == "foreign":
    foreign = start(1, with_secret=False)
    try:
        out, _ = foreign.communicate(timeout=60)
        for line in out.decode(errors="replace").splitlines():
            print("foreign:", line)
        print("foreign exit=%d" % foreign.returncode)
    except subprocess.TimeoutExpired:
        print("foreign: still running after 60 s (admitted?)")
        foreign.kill()
        foreign.communicate()
elif mode == "oversize":
    c = connect()
    sent = 0
    chunk = b"z" * (1 << 20)
    try:
        c.sendall(struct.pack("<I", 0xFFFFFFF0))
        while sent < (64 << 20):
            c.sendall(chunk)
            sent += len(chunk)
        print("oversize: rank 0 accepted %d MiB" % (sent >> 20))
    except OSError:
        print("oversize: dropped after %s MiB" % ("< 16" if sent < (16 << 20) else sent >> 20))
    c.close()
elif mode == "halfopen":
    for _ in range(100):
        held.append(connect())
    print("halfopen: 100 connections open")
elif mode == "secondjob":
    env = dict(os.environ)
    env.pop("DTC_JOB_SECRET", None)
    second = subprocess.run(["dtcrun", "--nproc-per-node=2", "--master-port=%d" % port] + args,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=120)
    for line in second.stdout.decode(errors="replace").splitlines():
        print("second:", line.replace(str(port), "PORT"))
    print("second exit=%d" % second.returncode)
else:
    sys.exit("unknown mode " + mode)

rank1 = start(1)
for name, p in [("rank1", rank1), ("rank0", rank0)]:
    try:
        out, _ = p.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    for line in out.decode(errors="replace").splitlines():
        print(name + ":", line)
    print("%s exit=%d" % (name, p.returncode))
for c in held:
    c.close()
