"""A failed file operation's advice names the variable that moves the folder it failed in (the download cache,
this tool's temporary folders, the build folder), and Ctrl-C while a command loads is an interrupt like any
other: a message, no traceback."""

from __future__ import annotations

import errno
import importlib
import tempfile
from pathlib import Path

import pytest

from verl_patches import cli
from verl_patches.errors import os_error_message
from verl_patches.git.scratch import PREFIX


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS, errno.ENOSPC])
@pytest.mark.parametrize(
    ("where", "setting"),
    [("cache", "VERL_PATCHES_CACHE"), ("scratch", "TMPDIR"), ("project", "VERL_PATCHES_BUILD_DIR")],
)
def test_the_advice_names_the_setting_of_the_folder_that_failed(tmp_path, monkeypatch, code, where, setting):
    monkeypatch.setenv("VERL_PATCHES_CACHE", str(tmp_path / "cache"))
    path = {
        "cache": tmp_path / "cache" / "verl-1.0.0.tar.gz",
        "scratch": Path(tempfile.gettempdir()) / f"{PREFIX}import-1-x" / "files",
        "project": tmp_path / "project" / "build" / "verl" / "a.py",
    }[where]
    message = os_error_message(OSError(code, "it failed", str(path)), "apply stopped")
    assert f"set {setting} to a folder" in message
    others = {"VERL_PATCHES_CACHE", "TMPDIR", "VERL_PATCHES_BUILD_DIR"} - {setting}
    assert not any(other in message for other in others), message


def test_ctrl_c_while_the_command_loads_is_reported_without_a_traceback(checkout, monkeypatch, capsys):
    def interrupted(name: str):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert cli.main(["status", "-C", str(checkout.root)]) == 130
    assert "verl-patches: status interrupted; nothing is lost" in capsys.readouterr().err
