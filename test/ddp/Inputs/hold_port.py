#!/usr/bin/python3
"""hold_port.py COMMAND [ARGS...]: listen on a free port of 127.0.0.1
(accepting nothing) while COMMAND runs, with every "{port}" in its arguments
replaced by that port's number, then exit with COMMAND's status: the master
port is taken by another program."""
import socket
import subprocess
import sys

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.bind(("127.0.0.1", 0))
sock.listen(16)
port = str(sock.getsockname()[1])
sys.exit(subprocess.call([a.replace("{port}", port) for a in sys.argv[1:]]))
