"""build/venv: the torch index is explicit and part of the stamp."""

from __future__ import annotations

import subprocess
import sys

import pytest

from verl_patches.errors import VerlPatchesError
from verl_patches.testing import venv

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@pytest.fixture
def requirements(tmp_path):
    path = tmp_path / "cpu-test.txt"
    path.write_text("# pinned\ntorch==2.13.0  # the build comes from the index\nnumpy==2.4.6\n")
    return path


def test_without_an_index_pip_configuration_decides(requirements):
    (cmd,) = venv.install_commands(venv.Path("py"), [requirements], "")
    assert cmd == ["py", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(requirements)]


def test_with_an_index_torch_comes_first_from_that_index_alone(requirements):
    first, rest = venv.install_commands(venv.Path("py"), [requirements], CPU_INDEX)
    assert first == [
        "py", "-m", "pip", "--isolated", "install", "--quiet", "--disable-pip-version-check",
        "--index-url", CPU_INDEX, "torch==2.13.0",
    ]  # fmt: skip
    assert rest[-2:] == ["-r", str(requirements)]


def test_an_index_without_a_torch_pin_is_an_error(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("torchvision==0.29.0\ntorch>=2\n")
    with pytest.raises(VerlPatchesError, match=r"TORCH_INDEX_URL is set, but no `torch==<version>` pin is in .*r\.txt"):
        venv.install_commands(venv.Path("py"), [path], CPU_INDEX)


def test_a_change_of_torch_index_rebuilds_the_venv(tmp_path, requirements, monkeypatch):
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    ran: list[list[str]] = []
    monkeypatch.setattr(venv, "_run", ran.append)
    monkeypatch.delenv("VERL_PATCHES_PYTHON", raising=False)
    monkeypatch.delenv("TORCH_INDEX_URL", raising=False)
    tree = tmp_path / "tree"
    tree.mkdir()

    def ensure() -> list[list[str]]:
        ran.clear()
        venv.ensure(target, [requirements], tree)
        return list(ran)

    assert len(ensure()) == 1
    assert ensure() == []
    monkeypatch.setenv("TORCH_INDEX_URL", CPU_INDEX)
    commands = ensure()
    assert [c for c in commands if "--index-url" in c][0][-2:] == [CPU_INDEX, "torch==2.13.0"]
    assert ensure() == []
    monkeypatch.setenv("TORCH_INDEX_URL", "https://download.pytorch.org/whl/cu128")
    assert len(ensure()) == 2


def test_a_nodeps_file_is_installed_without_dependencies_after_the_others(tmp_path, requirements):
    nodeps = tmp_path / "cpu-test-nodeps.txt"
    nodeps.write_text("nemo-automodel==0.7.0\n")
    rest, last = venv.install_commands(venv.Path("py"), [requirements, nodeps], "")
    assert rest[-2:] == ["-r", str(requirements)] and str(nodeps) not in rest
    assert last[-3:] == ["--no-deps", "-r", str(nodeps)]


def test_a_missing_nodeps_file_installs_nothing(tmp_path, requirements):
    (cmd,) = venv.install_commands(venv.Path("py"), [requirements, tmp_path / "cpu-test-nodeps.txt"], "")
    assert cmd[-2:] == ["-r", str(requirements)]
