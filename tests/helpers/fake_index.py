"""A fake PyPI JSON API and GitHub REST API: JSON files in a folder, served over HTTP on localhost.

A request for /<path>?<query> is answered with the file <path>@<query> (or <path> when there is no query), and
the content of <that file>.link as its Link header; anything else is a 404."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

from helpers import sha256


def pypi_document(releases: dict[str, Path | None], yanked: tuple[str, ...] = ()) -> dict:
    """PyPI's /pypi/<name>/json for releases: version -> its sdist (None: a wheel only)."""
    files = {}
    for version, sdist in releases.items():
        entry = (
            {"packagetype": "sdist", "filename": sdist.name, "digests": {"sha256": sha256(sdist)}}
            if sdist
            else {"packagetype": "bdist_wheel", "filename": f"verl-{version}-py3-none-any.whl", "digests": {}}
        )
        files[version] = [{**entry, "yanked": version in yanked}]
    return {"info": {"name": "verl"}, "releases": files}


def write_index(
    root: Path,
    releases: dict[str, Path | None] | None = None,
    tags: list[str] | list[list[str]] | None = None,
    pulls: dict[int, dict] | None = None,
    yanked: tuple[str, ...] = (),
    repository: str = "verl-project/verl",
) -> Path:
    """The fake indexes' files under root: root/pypi is PyPI's JSON API, root/github GitHub's REST API.
    tags: the tag names, or a list of pages of them (linked by Link headers); None leaves a source out (a 404)."""

    def put(path: str, document: object, link: str = "") -> None:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(document), encoding="utf-8")
        if link:
            target.with_name(target.name + ".link").write_text(link, encoding="utf-8")

    if releases is not None:
        put("pypi/verl/json", pypi_document(releases, yanked))
    if tags is not None:
        pages = tags if tags and isinstance(tags[0], list) else [tags]
        base = f"github/repos/{repository}/tags"
        for n, page in enumerate(pages, start=1):
            query = "per_page=100" if n == 1 else f"per_page=100&page={n}"
            link = f'<{{root}}/{base}?per_page=100&page={n + 1}>; rel="next"' if n < len(pages) else ""
            put(f"{base}@{query}", [{"name": name} for name in page], link)
    for number, document in (pulls or {}).items():
        put(f"github/repos/{repository}/pulls/{number}", document)
    return root


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    url: str

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        parts = urlsplit(self.path)
        name = parts.path.lstrip("/") + (f"@{parts.query}" if parts.query else "")
        target = (self.root / name).resolve()
        if not target.is_file() or self.root.resolve() not in target.parents:
            self.send_error(404)
            return
        body = target.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        link = target.with_name(target.name + ".link")
        if link.is_file():
            self.send_header("Link", link.read_text(encoding="utf-8").replace("{root}", self.url))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's signature)
        pass


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve root on a free localhost port; yields its URL."""
    handler = type("Handler", (_Handler,), {"root": root})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handler.url
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """A localhost URL where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
