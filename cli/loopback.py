"""Listening addresses: ``--listen`` parsed, and ports on 127.0.0.1 for the processes
``make demo`` (and the tests) start and wait for."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from callgate.reassemble.errors import UsageError


def split_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6; an empty host is 127.0.0.1) as (host, port).
    Raises ``UsageError``."""
    host, _, port = listen.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen takes HOST:PORT, not {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def taken(host: str, port: int, error: OSError) -> UsageError:
    """The one line for a ``--listen`` address that cannot be listened on."""
    reason = error.strerror or type(error).__name__
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return UsageError(f"--listen {where}: {reason}; give another --listen HOST:PORT")


def require_free(host: str, port: int) -> None:
    """Raise ``taken``'s ``UsageError`` when nothing could listen on ``host:port`` now (in
    use, or no such address here), before a server that would fail there with advice of its
    own is started."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        try:
            probe.bind((host, port))
        except OSError as error:
            raise taken(host, port, error) from None


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_listening(
    port: int, alive: Callable[[], bool] = lambda: True, timeout: float = 30
) -> bool:
    """Whether ``port`` starts listening within ``timeout`` seconds; gives up early once the
    process that should listen there is gone (``alive`` says so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        if listening(port):
            return True
        time.sleep(0.05)
    return False
