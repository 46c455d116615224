#!/usr/bin/env python3
"""Prints COUNT loopback ports, free now and distinct, for servers to listen on.

They come from below the kernel's range for the local ports of outgoing connections
(ip_local_port_range): a port the kernel hands out (a bind to port 0) can be taken by any
client connection before the server binds it, or before a later restart of a server that
keeps its port. seqvend chooses the ports of its own clusters the same way
(src/local_pg/host.rs).

    scripts/free_ports.py 8
"""
import random
import socket
import sys

LOWEST = 20_000


def outgoing_ports_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def is_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(count):
    below = outgoing_ports_start()
    if below <= LOWEST + 1_000:
        # No room below the outgoing range: let the kernel choose, holding each port until
        # all are chosen so that none repeats.
        held = [socket.socket() for _ in range(count)]
        for s in held:
            s.bind(("127.0.0.1", 0))
        ports = [s.getsockname()[1] for s in held]
        for s in held:
            s.close()
        return ports
    # From a random point, so that scripts started together rarely try the same ports.
    start = random.randrange(below - LOWEST)
    ports = []
    for i in range(below - LOWEST):
        port = LOWEST + (start + i) % (below - LOWEST)
        if is_free(port):
            ports.append(port)
            if len(ports) == count:
                return ports
    sys.exit(f"no {count} free ports between {LOWEST} and {below}")


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
