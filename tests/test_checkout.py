"""The checkout (checkout.py): a command reads upstream.toml once and passes what it read on (Project.loaded), and
parses each patch file at most once: the series and its patches are loaded with the checkout, once, and passed on
too; a relative build folder is relative to the checkout."""

from __future__ import annotations

import types
from collections import Counter

import pytest
from helpers import message

from verl_patches import checkout as checkout_module
from verl_patches.model.patch import Patch

COMMANDS = [("status",), ("table", "--all"), ("check", "--no-apply", "--no-upstream-checks")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_command_parses_upstream_toml_once(checkout, monkeypatch, command):
    parsed = []
    real = checkout_module.tomllib

    def loads(text):
        parsed.append(text)
        return real.loads(text)

    counting = types.SimpleNamespace(loads=loads, TOMLDecodeError=real.TOMLDecodeError)
    monkeypatch.setattr(checkout_module, "tomllib", counting)
    assert checkout.cli(*command) == 0
    assert len(parsed) == 1


def two_queues(checkout, monkeypatch) -> list[str]:
    """Base 1.0.0 (queue patches/, built) with three patches, and base 1.1.0 whose queue (patches/1.1.0) carries
    them under other file names; the commands work on 1.0.0. Returns the patch file names of both queues."""
    assert checkout.cli("apply") == 0
    for n in range(3):
        checkout.commit_in_tree(f"verl/p{n}.py", f"P = {n}\n", message(f"[misc] feat: part {n}"))
    assert checkout.cli("export") == 0
    old = [line for line in (checkout.root / "patches" / "series").read_text().splitlines() if line.endswith("patch")]
    newer = checkout.root / "patches" / "1.1.0"
    newer.mkdir()
    for name in old:
        (newer / f"carried-{name}").write_bytes((checkout.root / "patches" / name).read_bytes())
    (newer / "series").write_text("".join(f"carried-{name}\n" for name in old))
    with open(checkout.root / "upstream.toml", "a") as toml:
        toml.write(f'\n[base."1.1.0"]\nname = "verl"\nqueue = "patches/1.1.0"\nsha256 = "{"0" * 64}"\n')
    monkeypatch.setenv("VERL_PATCHES_BASE", "1.0.0")
    return old + [f"carried-{name}" for name in old]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_command_parses_each_patch_file_at_most_once(checkout, monkeypatch, command):
    names = two_queues(checkout, monkeypatch)
    parsed: Counter[str] = Counter()
    real = Patch.parse.__func__

    def parse(cls, name, data, *args, **kwargs):
        parsed[name] += 1
        return real(cls, name, data, *args, **kwargs)

    monkeypatch.setattr(Patch, "parse", classmethod(parse))
    checkout.cli(*command)  # its exit status is not the point here (the patches have no tests: check finds that)
    print(f"{' '.join(command)}: parses per patch file: {dict(parsed)}")
    assert set(parsed) <= set(names)
    assert max(parsed.values(), default=0) <= 1, dict(parsed)


def test_relative_build_dir_is_relative_to_the_checkout(checkout, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("VERL_PATCHES_BUILD_DIR", "out/build")
    assert checkout.cli("apply") == 0
    assert (checkout.root / "out/build/1.0.0/verl/.git").is_dir()
    assert not (elsewhere / "out").exists()
