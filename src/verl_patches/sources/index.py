"""Asking PyPI's JSON API and GitHub's REST API about verl: its releases, its tags, a pull request's state.

Each answer is a JSON document; an index that cannot be reached (or answers with something else) raises
Unreachable naming the URL and why, so that a caller can go on with the other index."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass

from verl_patches.errors import VerlPatchesError

PYPI_ENV = "VERL_PATCHES_PYPI_URL"
GITHUB_ENV = "VERL_PATCHES_GITHUB_API"
PYPI_URL = "https://pypi.org/pypi"
GITHUB_API = "https://api.github.com"
TIMEOUT_S = 30
MAX_PAGES = 10  # GitHub's tag list, 100 a page
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


class Unreachable(VerlPatchesError):
    def __init__(self, url: str, reason: str):
        self.url = url
        self.reason = reason
        super().__init__(f"{url}: {reason}")


@dataclass(frozen=True)
class Index:
    pypi: str = PYPI_URL
    github: str = GITHUB_API
    timeout: float = TIMEOUT_S

    @classmethod
    def from_environment(cls, pypi: str | None = None, github: str | None = None) -> Index:
        """The given URLs, else VERL_PATCHES_PYPI_URL and VERL_PATCHES_GITHUB_API, else the public services."""
        return cls(
            (pypi or os.environ.get(PYPI_ENV) or PYPI_URL).rstrip("/"),
            (github or os.environ.get(GITHUB_ENV) or GITHUB_API).rstrip("/"),
        )

    def pypi_project(self, name: str) -> object:
        return self._get(f"{self.pypi}/{name}/json")[0]

    def github_tags(self, repository: str) -> list:
        """Every tag of the repository (following GitHub's pages, up to MAX_PAGES of 100)."""
        url: str | None = f"{self.github}/repos/{repository}/tags?per_page=100"
        tags: list = []
        for _ in range(MAX_PAGES):
            if url is None:
                break
            document, link = self._get(url, github=True)
            if not isinstance(document, list):
                raise Unreachable(url, "the answer is not a list of tags")
            tags += document
            match = _NEXT.search(link)
            url = match.group(1) if match else None
        return tags

    def pull_request(self, repository: str, number: int) -> object:
        return self._get(f"{self.github}/repos/{repository}/pulls/{number}", github=True)[0]

    def _get(self, url: str, github: bool = False) -> tuple[object, str]:
        """The JSON document at url and its Link header."""
        headers = {"User-Agent": "verl-patches", "Accept": "application/json"}
        token = os.environ.get("GITHUB_TOKEN")
        if github and token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (http(s) or file)
                body = response.read()
                link = response.headers.get("Link", "") if response.headers else ""
        except urllib.error.HTTPError as exc:
            raise Unreachable(url, f"HTTP {exc.code} {exc.reason}") from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise Unreachable(url, str(getattr(exc, "reason", None) or exc)) from exc
        try:
            return json.loads(body), link
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise Unreachable(url, f"the answer is not JSON ({exc})") from exc
