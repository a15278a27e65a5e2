#!/usr/bin/python3
"""hold_port.py PORT COMMAND [ARGS...]: listen on 127.0.0.1:PORT (accepting
nothing) while COMMAND runs, then exit with COMMAND's status: the master port
is taken by another program."""
import socket
import subprocess
import sys

port = int(sys.argv[1])
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", port))
sock.listen(16)
sys.exit(subprocess.call(sys.argv[2:]))
