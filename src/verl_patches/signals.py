"""SIGTERM and SIGHUP end a command the way Ctrl-C (SIGINT) does: as an exception that unwinds it."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

CAUGHT = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def as_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {signum: signal.signal(signum, _raise) for signum in CAUGHT}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def exit_status(exc: KeyboardInterrupt) -> int:
    """128 + the signal number, as a shell reports a process killed by it."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)
