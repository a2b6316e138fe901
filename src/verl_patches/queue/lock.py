"""One verl-patches command at a time per build folder: an advisory lock on <build folder>/verl-patches.lock; and
one command at a time that writes the checkout's queues and upstream.toml, whatever its build folder
(VERL_PATCHES_BUILD_DIR): build/queue.lock.

The lock is an flock(2) on the file, so the kernel releases it when its holder exits in any way
(crash, SIGKILL): a lock file left behind is never stale. The file names the current holder.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from verl_patches.errors import VerlPatchesError, os_error_message
from verl_patches.model.timestamps import utc_stamp

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: commands are not serialised
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

LOCK_FILE = "verl-patches.lock"
QUEUE_LOCK_FILE = "queue.lock"
TIMEOUT_ENV = "VERL_PATCHES_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 600.0
POLL = 0.1

_held: dict[Path, int] = {}  # lock path -> nesting depth in this process


class LockBusyError(VerlPatchesError):
    """Another verl-patches command holds the lock."""


def describe_holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {info['pid']} on {info['host']} (`verl-patches {info['command']}`, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not written its name yet"


def timeout_from_env() -> float:
    value = os.environ.get(TIMEOUT_ENV, "")
    if not value:
        return DEFAULT_TIMEOUT
    try:
        timeout = float(value)
    except ValueError:
        timeout = math.nan
    if not math.isfinite(timeout) or timeout < 0:
        raise VerlPatchesError(
            f"{TIMEOUT_ENV}={value!r} is not a number of seconds: set it to a finite number >= 0 (default "
            f"{DEFAULT_TIMEOUT:g}), or unset it"
        )
    return timeout


def _open(path: Path) -> tuple[int, bool]:
    """A descriptor of the lock file, created when missing; read-only when build/ cannot be written (flock
    needs no write access, so a read-only checkout still serialises commands that only read)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644), True
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and path.is_file():
            return os.open(path, os.O_RDONLY), False
        raise VerlPatchesError(os_error_message(exc, f"cannot open the lock file {path}")) from None


@contextlib.contextmanager
def held(build_dir: Path, command: str, timeout: float | None = None, name: str = LOCK_FILE) -> Iterator[Path]:
    """Hold the lock file `name` of build_dir while the block runs; wait up to timeout seconds for another holder."""
    path = (build_dir / name).resolve()
    if path in _held or fcntl is None:
        _held[path] = _held.get(path, 0) + 1
        try:
            yield path
        finally:
            _held[path] -= 1
            if not _held[path]:
                del _held[path]
        return
    timeout = timeout_from_env() if timeout is None else timeout
    fd, writable = _open(path)
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = describe_holder(path)
                if time.monotonic() >= deadline:
                    raise LockBusyError(
                        f"{path} is held by {holder}: another verl-patches command is using this checkout. "
                        f"Wait for it to finish (waited {timeout:g}s; {TIMEOUT_ENV} sets how long)."
                    ) from None
                if not waited:
                    logger.info(f"verl-patches: waiting for {path}, held by {holder}")
                    waited = True
                time.sleep(POLL)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command,
            "since": utc_stamp(time.time()),
        }
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        _held[path] = 1
        try:
            yield path
        finally:
            del _held[path]
            if writable:
                os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the descriptor releases the flock
