"""Loopback ports."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing listens on now: for a server to start on, or to be refused on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    """Whether something listens on the loopback port."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
