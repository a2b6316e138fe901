"""A synthetic upstream whose verl/models/clamp.py has a bug (`BUGGY`), the patch that fixes it with its CPU test
(`add_clamp_fix`), the fix upstream made its own way (`UPSTREAM_OWN_FIX`), and a rebase of the queue onto a 1.1.0
with another clamp.py; the `lifecycle` fixture (tests/conftest.py) applies that upstream."""

from __future__ import annotations

import re

from helpers.archives import make_sdist, sha256

BUGGY = "def clamp(x):\n    return x\n"
FIXED = "def clamp(x):\n    return max(x, 0)\n"
UPSTREAM_OWN_FIX = "def clamp(x):\n    if x < 0:\n        return 0\n    return x\n"
CPU_TEST = (
    "from verl.models.clamp import clamp\n\n\ndef test_clamp():\n    assert clamp(-1) == 0\n    assert clamp(3) == 3\n"
)
GPU_TEST = "import pytest\n\npytest.skip('needs CUDA', allow_module_level=True)\n"


def message(subject: str, trailers: str = "Forwarded: no", extra: str = "") -> str:
    return f"{subject}\n\nProblem: p.\n\nFix: f.\n\nTests: t.\n\n{trailers}\n{extra}"


def commit_files(checkout, files: dict[str, str], msg: str) -> None:
    for path, text in files.items():
        target = checkout.tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        checkout.user_git("add", path)
    checkout.user_git("commit", "-q", "-F", "-", input=msg)


def add_clamp_fix(checkout, trailers="Forwarded: no\nBug: https://github.com/verl-project/verl/issues/1"):
    commit_files(
        checkout,
        {
            "verl/models/clamp.py": FIXED,
            "tests/models/test_clamp_on_cpu.py": CPU_TEST,
            "tests/models/test_clamp_on_gpu.py": GPU_TEST,
        },
        message("[megatron] fix: clamp negative values", trailers),
    )


def rebase(checkout, tmp_path, capsys, clamp: str, *extra_files: tuple[str, str], write=True):
    """Rebase the queue onto a 1.1.0 whose clamp.py is `clamp`; the report's rows by subject, the output, rc."""
    assert checkout.cli("export") == 0
    new = make_sdist(tmp_path / "new", "1.1.0", {"verl/models/clamp.py": clamp, **dict(extra_files)})
    (checkout.cache / new.name).write_bytes(new.read_bytes())
    capsys.readouterr()
    args = ["rebase", "--onto", "1.1.0", "--sha256", sha256(new)] + (["--write"] if write else [])
    rc = checkout.cli(*args)
    out = capsys.readouterr().out
    rows = {line.split("  ")[1].strip(): line for line in out.splitlines() if re.match(r"\d+  ", line)}
    return rows, out, rc
