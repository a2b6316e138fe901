"""wheel: reproducible, with the local version; refused while the tree holds unexported work."""

from __future__ import annotations

import zipfile

from helpers.steps import add_good_patch, export_good_patch


def test_wheel_is_reproducible_with_local_version(checkout, tmp_path):
    export_good_patch(checkout)
    assert checkout.cli("wheel", "--outdir", str(tmp_path / "one")) == 0
    assert checkout.cli("wheel", "--outdir", str(tmp_path / "two")) == 0
    (one,) = (tmp_path / "one").glob("*.whl")
    (two,) = (tmp_path / "two").glob("*.whl")
    assert one.name == "verl-1.0.0+fix.1-py3-none-any.whl"
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as wheel:
        assert wheel.read("verl/version/version").decode().strip() == "1.0.0+fix.1"
        assert wheel.read("verl/models/util.py").decode().endswith("return []\n")


def test_wheel_refuses_unexported_work(checkout, capsys):
    assert checkout.cli("apply") == 0
    add_good_patch(checkout)
    capsys.readouterr()
    assert checkout.cli("wheel") == 1
    assert "refusing to build a wheel" in capsys.readouterr().err
