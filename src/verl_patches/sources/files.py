"""Files the tool writes whole: written beside their place and renamed into it, so that a reader, or a command
killed halfway, finds the old file or the new one and never a part of one; and its JSON state files (records,
caches, backup descriptions) read back as None when they are missing or unreadable."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic(target: os.PathLike | str, replace: bool = True, mode: int | None = None) -> Iterator[IO[bytes]]:
    """A binary file beside target (a dot file) to write; when the block ends without an error it takes target's
    place (replace=False: an existing target is kept and the new file dropped), with mode when given, else the mode
    of any new file (0o666 less the umask, or what the folder's default ACL says); on an error it is removed."""
    target = Path(target)
    fd, tmp = _create_beside(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        if mode is not None:
            os.chmod(tmp, mode)
        if not replace and target.exists():  # another process won the race: keep its file, never overwrite
            os.unlink(tmp)
            return
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _create_beside(target: Path) -> tuple[int, str]:
    """A new file of a name no other has, beside target, open for writing. Created with 0o666 for the system to
    take the umask away, as open() does (not tempfile.mkstemp, whose 0o600 would stay on the file): the umask is
    never read, so no other thread's files are made while it is changed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free name for a new file beside {target}")


def write_atomic(target: os.PathLike | str, data: bytes) -> None:
    with atomic(target) as handle:
        handle.write(data)


def write_json(target: os.PathLike | str, value: Any, indent: int = 1) -> None:
    """A JSON state file, keys sorted, written whole; its folder is made when missing."""
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, (json.dumps(value, indent=indent, sort_keys=True) + "\n").encode("utf-8"))


def read_json(path: os.PathLike | str) -> Any:
    """A JSON state file's value; None when it is missing or cannot be read or parsed."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
