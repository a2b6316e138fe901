"""rebase --onto X --write on a checkout with declared bases: the new queue with its conflicts left for a hand port,
a declared tag archive imported as the new base, upstream.toml backed up before --force declares the base."""

from __future__ import annotations

from helpers import make_archive, make_sdist, sha256, tree_id_of
from helpers.bases import REPO_ONLY, archive_table, commit, git_in, tree_of
from helpers.clamp import CPU_TEST, FIXED, GPU_TEST, UPSTREAM_OWN_FIX, message


def test_rebase_write_creates_the_new_queue_and_leaves_conflicts_for_a_hand_port(one_archive_base, tmp_path, capsys):
    root, tree = one_archive_base.root, tree_of(one_archive_base, "1.0.0")
    tests = {"tests/models/test_clamp_on_cpu.py": CPU_TEST, "tests/models/test_clamp_on_gpu.py": GPU_TEST}
    commit(tree, {"verl/models/clamp.py": FIXED, **tests}, message("[megatron] fix: clamp negative values"))
    commit(tree, {"docs/notes.md": "notes\n"}, message("[misc] feat: add notes", extra="Prove-Exempt: docs\n"))
    scale = "from verl.models.scale import scale\n\n\ndef test_scale():\n    assert scale(2) == 4\n"
    commit(
        tree,
        {"verl/models/scale.py": "def scale(x):\n    return x * 2\n", "tests/models/test_scale_on_cpu.py": scale,
         "tests/models/test_scale_on_gpu.py": GPU_TEST},
        message("[megatron] fix: scale by two"),
    )  # fmt: skip
    version_test = (
        "import pathlib\n\nimport verl\n\n\ndef test_v():\n"
        "    assert (pathlib.Path(verl.__file__).parent / 'version/version').read_text() == '1.0.0\\n'\n"
    )
    commit(
        tree,
        {"tests/test_version_on_cpu.py": version_test},
        message("[tests] test: pin the version", extra="Prove-Exempt: a test\n"),
    )
    assert one_archive_base.cli("export") == 0
    # 1.1.0 fixed clamp its own way and has a scale.py of its own that does not scale.
    new = make_sdist(
        tmp_path / "new", "1.1.0",
        {"verl/models/clamp.py": UPSTREAM_OWN_FIX, "verl/models/scale.py": "def scale(x):\n    return x\n"},
    )  # fmt: skip
    (one_archive_base.cache / new.name).write_bytes(new.read_bytes())
    capsys.readouterr()
    assert one_archive_base.cli("rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--write") == 1
    err = capsys.readouterr().err
    assert "declared base 1.1.0 in upstream.toml" in err and "wrote patches/1.1.0: 2 patch(es), series, to-port" in err
    queue = root / "patches" / "1.1.0"
    assert (queue / "series").read_text().splitlines()[-2:] == [
        "megatron-test-clamp-negative-values.patch", "misc-feat-add-notes.patch"
    ]  # fmt: skip
    carried = (queue / "megatron-test-clamp-negative-values.patch").read_text()
    assert "Base-Specific: verl 1.1.0 has the fix upstream" in carried and "verl/models/clamp.py" not in carried
    to_port = (queue / "to-port").read_text()
    # The scale patch conflicts; the version patch applies, but its test fails on 1.1.0: both need a hand port.
    assert [ln for ln in to_port.splitlines() if ln.endswith(".patch")] == [
        "megatron-fix-scale-by-two.patch", "tests-test-pin-the-version.patch"
    ]  # fmt: skip
    assert "#   tests/models/test_scale_on_cpu.py::test_scale" in to_port
    assert "#   tests/test_version_on_cpu.py::test_v" in to_port
    upstream = (root / "upstream.toml").read_text()
    assert '[base."1.1.0"]' in upstream and 'over = "1.0.0"' in upstream and f'sha256 = "{sha256(new)}"' in upstream
    # The new queue builds on its declared base (its tree pin holds) and passes check, its drift explained.
    assert one_archive_base.cli("apply", "--base", "1.1.0") == 0
    assert one_archive_base.cli("check", "--base", "1.1.0") == 0
    assert one_archive_base.cli("check", "--base", "1.0.0", "--no-apply") == 0
    # Written again: the same queue is left as it is; a queue with other content is replaced only with --force.
    rebase = ["rebase", "--onto", "1.1.0", "--base", "1.0.0", "--write"]
    capsys.readouterr()
    assert one_archive_base.cli(*rebase) == 1
    assert "patches/1.1.0 already holds this queue; nothing to write" in capsys.readouterr().err
    (queue / "series").write_text((queue / "series").read_text() + "# a local note\n")
    assert one_archive_base.cli(*rebase) == 1
    assert "--write refused: patches/1.1.0 already holds a queue that differs" in capsys.readouterr().err
    assert (queue / "series").read_text().endswith("# a local note\n")
    (queue / "notes.txt").write_text("mine\n")
    assert one_archive_base.cli(*rebase, "--force") == 1
    assert "patches/1.1.0 holds what is not a queue's (notes.txt)" in capsys.readouterr().err
    (queue / "notes.txt").unlink()
    assert one_archive_base.cli(*rebase, "--force") == 1
    assert "kept a backup of patches/1.1.0" in capsys.readouterr().err
    assert not (queue / "series").read_text().endswith("# a local note\n")
    assert upstream == (root / "upstream.toml").read_text()


def test_rebase_onto_a_declared_tag_archive_imports_the_archive(one_archive_base, tmp_path, capsys):
    tree = tree_of(one_archive_base, "1.0.0")
    commit(tree, {"docs/notes.md": "notes\n"}, message("[misc] feat: add notes", extra="Prove-Exempt: docs\n"))
    assert one_archive_base.cli("export") == 0
    mirror = tmp_path / "mirror"
    archive = make_archive(mirror, "1.1.0", {"verl/models/clamp.py": UPSTREAM_OWN_FIX, **REPO_ONLY})
    upstream = one_archive_base.root / "upstream.toml"
    upstream.write_text(upstream.read_text() + "\n" + archive_table("1.1.0", tree_id_of(archive, tmp_path)))
    capsys.readouterr()
    assert one_archive_base.cli("rebase", "--onto", "1.1.0", "--write") == 0
    out, err = capsys.readouterr()
    assert "- new tag archive: verl-project/verl v1.1.0" in out and "applies cleanly" in out
    assert "declared base" not in out + err  # the table is there already
    assert (one_archive_base.root / "patches" / "1.1.0" / "misc-feat-add-notes.patch").is_file()
    assert one_archive_base.cli("apply", "--base", "1.1.0") == 0
    clamp = git_in(tree_of(one_archive_base, "1.1.0"), "show", "upstream/1.1.0:verl/models/clamp.py")
    assert clamp == UPSTREAM_OWN_FIX


def test_rebase_write_force_backs_up_upstream_toml_before_declaring_the_base(one_archive_base, tmp_path, capsys):
    tree = tree_of(one_archive_base, "1.0.0")
    commit(tree, {"docs/notes.md": "notes\n"}, message("[misc] feat: add notes", extra="Prove-Exempt: docs\n"))
    assert one_archive_base.cli("export") == 0
    new = make_sdist(one_archive_base.cache, "1.1.0")
    upstream = one_archive_base.root / "upstream.toml"
    declared_once = upstream.read_text()
    rebase = ["rebase", "--onto", "1.1.0", "--sha256", sha256(new), "--write"]
    assert one_archive_base.cli(*rebase) == 0
    upstream.write_text(declared_once)  # 1.1.0 undeclared again; its queue folder is there, with a local change
    series = one_archive_base.root / "patches" / "1.1.0" / "series"
    series.write_text(series.read_text() + "# a local note\n")
    capsys.readouterr()
    assert one_archive_base.cli(*rebase, "--force") == 0
    assert "declared base 1.1.0 in upstream.toml" in capsys.readouterr().err
    [kept] = (one_archive_base.root / "build" / "1.1.0" / "backups").glob("*/backup.json")
    assert (kept.parent / "upstream.toml").read_text() == declared_once
    assert (kept.parent / "patches" / "series").read_text().endswith("# a local note\n")
    capsys.readouterr()
    assert one_archive_base.cli("backups", "--base", "1.1.0") == 0
    assert kept.parent.name in capsys.readouterr().out
