#!/usr/bin/python3
"""free_port.py: prints a TCP port that is free on 127.0.0.1 now (the kernel
picks it), for tests that must not collide with other tests' ports."""
import socket

with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
