#!/usr/bin/python3
"""Print a TCP port of this machine that no socket is bound to now (lit: %free_port).

Multi-process tests take their MASTER_PORT from here instead of a fixed
number, so that two test runs on one machine (or a busy port) never collide.
"""
import socket

with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
