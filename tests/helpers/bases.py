"""Checkouts with several bases: the upstream.toml tables of a tag archive and of an sdist laid over it, the
overlay's tree id (with plain tar and git), git in a base's build tree, one queue folder per base."""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from pathlib import Path

from helpers.archives import FAKE_COMMIT, git_tree_id

REPO_ONLY = {"examples/run.sh": "#!/bin/sh\necho run\n", ".github/workflows/ci.yml": "name: ci\n"}
README = "# verl\nline two\n"
README_1_1 = "# verl\nnew line\nline two\n"  # the 1.1.0 sdist changes the context of "line two"


def archive_table(version: str, tree: str) -> str:
    return (
        f'[base."{version}"]\nname = "verl"\nqueue = "patches/{version}"\nsource = "git-archive"\n'
        f'repository = "verl-project/verl"\ntag = "v{version}"\ncommit = "{FAKE_COMMIT}"\ntree = "{tree}"\n'
    )


def overlay_table(version: str, over: str, sha: str, tree: str) -> str:
    return (
        f'[base."{version}"]\nname = "verl"\nqueue = "patches/{version}"\nsource = "sdist-over-archive"\n'
        f'over = "{over}"\nsha256 = "{sha}"\ntree = "{tree}"\n'
    )


def overlay_tree_id(archive: Path, sdist: Path, tmp: Path, leave_out=("PKG-INFO",)) -> str:
    """The tree id of the sdist's files over the archive's, with plain tar and git (independently of the tool)."""
    work = Path(tempfile.mkdtemp(prefix="overlay-", dir=tmp))
    for source in (archive, sdist):
        with tarfile.open(source) as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts[1:]
                if not parts or "/".join(parts) in leave_out or not member.isfile():
                    continue
                target = work.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
                target.chmod(0o755 if member.mode & 0o111 else 0o644)
    return git_tree_id(work)


def tree_of(checkout, version: str) -> Path:
    return checkout.root / "build" / version / "verl"


def git_in(tree: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(tree), *args], capture_output=True, text=True, input=input, check=True
    ).stdout


def commit(tree: Path, files: dict[str, str], msg: str) -> None:
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
        git_in(tree, "add", path)
    git_in(tree, "commit", "-q", "-F", "-", input=msg)


def make_queues(root: Path, *versions: str) -> None:
    (root / "patches" / "series").unlink(missing_ok=True)
    for version in versions:
        (root / "patches" / version).mkdir(parents=True, exist_ok=True)
        (root / "patches" / version / "series").write_text("# series\n")
