"""Get the pinned upstream source file into the cache: an archive (cache, mirror, GitHub) or a PyPI sdist.

An archive is verified later, by the git tree id of its imported files (tree.py); a cached file is never
overwritten or deleted here.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from verl_patches.errors import VerlPatchesError
from verl_patches.model.upstream import Upstream
from verl_patches.sources import files, sdist

logger = logging.getLogger(__name__)

MIRROR_ENV = "VERL_PATCHES_MIRROR"
TIMEOUT_S = 60


def mirror_from(option: str | None) -> str | None:
    """The mirror named by --mirror, else by VERL_PATCHES_MIRROR; None when neither is set."""
    return option or os.environ.get(MIRROR_ENV) or None


def archive_cache_path(upstream: Upstream, cache_dir: Path) -> Path:
    return cache_dir / "archives" / upstream.repository.replace("/", "-") / upstream.archive_filename


def fetch(upstream: Upstream, cache_dir: Path, mirror: str | None = None) -> Path:
    """The cached source file of upstream, downloaded first when missing (an sdist is also checked by sha256).
    For an sdist over an archive: the sdist, after the archive it is laid over."""
    if upstream.over is not None:
        fetch(upstream.over, cache_dir, mirror)
    if not upstream.is_archive:
        return sdist.fetch(upstream, cache_dir)
    target = archive_cache_path(upstream, cache_dir)
    if sdist.cached_file(target):
        return target
    sdist.make_cache_dir(target.parent)
    tried = []
    urls = []
    if mirror:
        urls.append(_mirror_url(mirror, upstream.archive_filename))
    urls.append(upstream.archive_url)
    for url in urls:
        try:
            _download(url, target)
            return target
        except (OSError, urllib.error.URLError, ValueError, VerlPatchesError) as exc:
            tried.append(f"  - {url}: {getattr(exc, 'reason', None) or exc}")
    where = "" if mirror else f"  - no mirror: neither --mirror nor {MIRROR_ENV} is set\n"
    raise VerlPatchesError(
        f"cannot get {upstream.repository}'s {upstream.archive_name} ({upstream.archive_filename}):\n"
        + "\n".join(tried)
        + "\n"
        + where
        + f"Either let this machine reach github.com, or name an offline mirror (a folder, or a URL prefix, holding "
        f"{upstream.archive_filename}) with --mirror or {MIRROR_ENV}; its content is checked against the pinned "
        f"tree {upstream.tree}."
    )


def _mirror_url(mirror: str, filename: str) -> str:
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + filename
    return Path(mirror).resolve().joinpath(filename).as_uri()


def _download(url: str, target: Path) -> None:
    """Copy url to target through a temporary file beside it, with a progress line on stderr. A mirror folder's
    file is read as a regular file only: a FIFO or device there would block without a timeout."""
    logger.info(f"downloading {url}")
    with _opened(url) as (response, total):
        with files.atomic(target, replace=False, mode=0o644) as handle:  # a file won by another process is kept
            _copy_with_progress(response, handle, total, target.name)


@contextlib.contextmanager
def _opened(url: str):
    """(a readable response, its length or 0)."""
    if url.startswith("file:"):
        data = sdist.read_regular(Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path)))
        yield io.BytesIO(data), len(data)
        return
    request = urllib.request.Request(url, headers={"User-Agent": "verl-patches"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 (https URLs)
        yield response, int(response.headers.get("Content-Length") or 0)


def _copy_with_progress(response, handle, total: int, name: str) -> None:
    done = 0
    shown = 0.0
    while chunk := response.read(1 << 16):
        handle.write(chunk)
        done += len(chunk)
        now = time.monotonic()
        if now - shown > 0.5:
            shown = now
            _progress(name, done, total)
    _progress(name, done, total)
    print(file=sys.stderr, flush=True)
    if total and done != total:
        raise VerlPatchesError(f"the download of {name} stopped after {done} of {total} bytes: run again")


def _progress(name: str, done: int, total: int) -> None:
    size = f"{done / 2**20:.1f}" + (f" of {total / 2**20:.1f}" if total else "")
    print(f"\r  {name}: {size} MiB", end="", file=sys.stderr, flush=True)


def import_pinned(tree, upstream: Upstream, cache_dir: Path, mirror: str | None = None, checkout: bool = True) -> str:
    """The import commit of upstream in tree (a BuildTree), imported first when missing, and checked out when
    checkout. A source that does not match its pin raises before the work tree, HEAD or a branch changes."""
    base = tree.import_commit(upstream)
    if not base and upstream.over is not None:
        over = import_pinned(tree, upstream.over, cache_dir, mirror, checkout=False)
        base = tree.import_overlay(upstream, fetch(upstream, cache_dir, mirror), over, checkout=False)
    elif not base:
        base = tree.import_upstream(upstream, fetch(upstream, cache_dir, mirror), checkout=False)
    if checkout:
        tree.reset_to(base)
    return base


def import_source(tree, upstream: Upstream, cache_dir: Path, mirror: str | None = None, tag=True) -> str:
    """Import upstream's source as a new commit of tree (tagged upstream/<version> when tag) and check it out."""
    source = fetch(upstream, cache_dir, mirror)
    if upstream.over is not None:
        over = import_source(tree, upstream.over, cache_dir, mirror, tag=tag)
        return tree.import_overlay(upstream, source, over, tag=tag)
    return tree.import_upstream(upstream, source, tag=tag)
