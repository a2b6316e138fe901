"""One queue per declared base: upstream.toml's [base."<version>"] tables, --base on every command, the sdist laid
over another base's tag archive, the comparison between queues (`rebase --onto X --write`: test_rebase_write.py)."""

from __future__ import annotations

import subprocess

import pytest
from helpers.bases import README_1_1, REPO_ONLY, commit, git_in, tree_of
from helpers.clamp import message

from verl_patches.errors import ConfigError
from verl_patches.model.bases import parse_bases, select


def test_declared_bases_parse_and_select():
    archive = {"name": "verl", "queue": "patches/1.0.0", "source": "git-archive", "repository": "o/r", "tag": "v1",
               "commit": "1" * 40, "tree": "2" * 40}  # fmt: skip
    overlay = {"name": "verl", "queue": "patches/1.1.0", "source": "sdist-over-archive", "over": "1.0.0",
               "sha256": "3" * 64, "tree": "4" * 40}  # fmt: skip
    bases = parse_bases({"base": {"1.1.0": overlay, "1.0.0": archive}})
    assert [b.version for b in bases] == ["1.0.0", "1.1.0"]
    assert select(bases, None).version == "1.1.0" and select(bases, "1.0.0").queue == "patches/1.0.0"
    assert bases[1].upstream.over == bases[0].upstream and bases[1].upstream.pins_tree
    with pytest.raises(ConfigError, match=r"no base '2\.0' is declared in upstream.toml; declared: 1\.0\.0, 1\.1\.0"):
        select(bases, "2.0")
    with pytest.raises(ConfigError, match="must name a declared base whose source is 'git-archive'"):
        parse_bases({"base": {"1.1.0": {**overlay, "over": "0.1"}}})
    with pytest.raises(ConfigError, match="needs string keys tree"):
        parse_bases({"base": {"1.0.0": archive, "1.1.0": {k: v for k, v in overlay.items() if k != "tree"}}})
    with pytest.raises(ConfigError, match="needs queue"):
        parse_bases({"base": {"1.0.0": {k: v for k, v in archive.items() if k != "queue"}}})
    with pytest.raises(ConfigError, match="named by more than one base"):
        parse_bases({"base": {"1.0.0": archive, "1.1.0": {**overlay, "queue": "patches/1.0.0"}}})
    with pytest.raises(ConfigError, match="inside the checkout"):
        parse_bases({"base": {"1.0.0": {**archive, "queue": "../elsewhere"}}})


@pytest.mark.parametrize("also_tables", [False, True], ids=["alone", "beside-base-tables"])
def test_the_legacy_upstream_table_is_refused_with_how_to_write_it(checkout, capsys, also_tables):
    legacy = '[upstream]\nname = "verl"\nversion = "1.0.0"\nsource = "pypi-sdist"\nsha256 = "' + "a" * 64 + '"\n'
    tables = '\n[base."1.0.0"]\nname = "verl"\nqueue = "patches"\nsha256 = "' + "a" * 64 + '"\n'
    (checkout.root / "upstream.toml").write_text(legacy + (tables if also_tables else ""))
    assert checkout.cli("status") == 1
    err = capsys.readouterr().err
    assert "upstream.toml: the [upstream] table is no longer read" in err, err
    assert 'then rename [upstream] to [base."1.0.0"] and add queue = "patches"' in err, err
    assert "first move build/verl (and build/backups, if present) to build/1.0.0/" in err, err
    with pytest.raises(ConfigError, match=r'\[base\."<version>"\]'):
        parse_bases({"upstream": {"name": "verl"}})
    with pytest.raises(ConfigError, match=r"declares no base: add a table \[base"):
        parse_bases({})


def test_the_legacy_layouts_tree_is_found_again_by_following_the_advice(checkout, capsys):
    """The [upstream] layout kept its tree in build/verl: moved as the error says, its un-exported commit is seen."""
    assert checkout.cli("apply") == 0
    checkout.commit_in_tree("verl/extra.py", "X = 1\n", message("[misc] fix: not exported yet"))
    (checkout.tree / "verl" / "extra.py").write_text("X = 2\n")
    assert checkout.cli("apply", "--force") == 0  # a backup, and the commit is gone from the tree
    checkout.commit_in_tree("verl/kept.py", "K = 1\n", message("[misc] fix: only in build/verl"))
    build = checkout.root / "build"
    for name in ("verl", "backups"):
        (build / "1.0.0" / name).rename(build / name)
    declared = (checkout.root / "upstream.toml").read_text()
    (checkout.root / "upstream.toml").write_text(declared.replace('[base."1.0.0"]', '[upstream]\nversion = "1.0.0"'))
    capsys.readouterr()
    assert checkout.cli("status") == 1
    assert "first move build/verl (and build/backups, if present) to build/1.0.0/" in capsys.readouterr().err
    for name in ("verl", "backups"):  # what the advice says, then the table renamed
        (build / name).rename(build / "1.0.0" / name)
    (checkout.root / "upstream.toml").write_text(declared)
    assert checkout.cli("status") == 1
    assert "only in build/verl" in capsys.readouterr().out
    assert checkout.cli("backups") == 0 and "apply --force" in capsys.readouterr().out


def test_each_command_works_on_the_base_it_is_given(two_bases, capsys, monkeypatch):
    assert two_bases.cli("apply", "--base", "1.0.0") == 0
    assert two_bases.cli("apply") == 0  # the newest base
    old, new = tree_of(two_bases, "1.0.0"), tree_of(two_bases, "1.1.0")
    assert git_in(old, "rev-parse", "upstream/1.0.0^{tree}").strip() != two_bases.overlay_tree
    assert git_in(new, "rev-parse", "upstream/1.1.0^{tree}").strip() == two_bases.overlay_tree
    # The sdist's files come from the sdist, the others (examples/, .github/) from the 1.0.0 archive.
    assert git_in(new, "show", "upstream/1.1.0:README.md") == README_1_1
    assert git_in(new, "show", "upstream/1.1.0:examples/run.sh") == REPO_ONLY["examples/run.sh"]
    assert git_in(new, "show", "upstream/1.1.0:verl/version/version") == "1.1.0\n"
    assert "PKG-INFO" not in git_in(new, "ls-tree", "--name-only", "upstream/1.1.0")
    assert git_in(new, "rev-parse", "upstream/1.1.0^").strip() == git_in(new, "rev-parse", "upstream/1.0.0").strip()
    commit(old, {"verl/a.py": "A = 1\n"}, message("[misc] feat: add a", extra="Prove-Exempt: x\n"))
    assert two_bases.cli("export", "--base", "1.0.0") == 0
    assert (two_bases.root / "patches" / "1.0.0" / "misc-feat-add-a.patch").is_file()
    assert not list((two_bases.root / "patches" / "1.1.0").glob("*.patch"))
    capsys.readouterr()
    monkeypatch.setenv("VERL_PATCHES_BASE", "1.0.0")
    assert two_bases.cli("table") == 0
    assert capsys.readouterr().out.startswith("verl 1.0.0 (patches/1.0.0) + 1 patch(es): verl-1.0.0+fix.1-py3-none-any")
    assert two_bases.cli("table", "--all") == 0
    out = capsys.readouterr().out
    assert "verl 1.0.0 (patches/1.0.0) + 1 patch(es)" in out and "verl 1.1.0 (patches/1.1.0) + 0 patch(es)" in out
    assert two_bases.cli("status", "--base", "1.1.0") == 0
    assert two_bases.cli("wheel", "--base", "2.0") == 1
    assert "no base '2.0' is declared in upstream.toml (--base 2.0); declared: 1.0.0, 1.1.0" in capsys.readouterr().err
    monkeypatch.setenv("VERL_PATCHES_BASE", "2.1")
    assert two_bases.cli("wheel") == 1
    err = capsys.readouterr().err
    assert "no base '2.1' is declared in upstream.toml (VERL_PATCHES_BASE=2.1 in the environment)" in err
    monkeypatch.delenv("VERL_PATCHES_BASE")
    assert two_bases.cli("compare", "1.0.0", "1.0.0") == 1
    assert "compare 1.0.0 1.0.0: name two different bases (declared: 1.0.0, 1.1.0)" in capsys.readouterr().err
    assert two_bases.cli("compare", "1.0.0", "3.0") == 1
    assert "no base '3.0' is declared in upstream.toml (compare 1.0.0 3.0)" in capsys.readouterr().err


def test_the_overlay_import_is_checked_against_its_tree_pin(two_bases, capsys):
    text = (two_bases.root / "upstream.toml").read_text()
    (two_bases.root / "upstream.toml").write_text(text.replace(two_bases.overlay_tree, "5" * 40))
    capsys.readouterr()
    assert two_bases.cli("apply", "--base", "1.1.0") == 1
    err = capsys.readouterr().err
    assert "content mismatch" in err and "laid over upstream/1.0.0" in err and "5" * 40 in err
    assert two_bases.overlay_tree in err
    tree = tree_of(two_bases, "1.1.0")
    assert "upstream/1.1.0" not in git_in(tree, "tag", "--list")


def test_compare_and_check_report_drift_unless_a_patch_explains_it(two_bases, capsys):
    fix = message("[doc] feat: say line 2", extra="Prove-Exempt: docs only\n")
    other = message("[misc] feat: add notes", extra="Prove-Exempt: docs only\n")
    for version in ("1.0.0", "1.1.0"):
        assert two_bases.cli("apply", "--base", version) == 0
        tree = tree_of(two_bases, version)
        readme = (tree / "README.md").read_text()
        commit(tree, {"README.md": readme.replace("line two", "line 2")}, fix)
        commit(tree, {"docs/notes.md": f"notes of {version}\n"}, other)  # differs between the queues
        assert two_bases.cli("export", "--base", version) == 0
    capsys.readouterr()
    assert two_bases.cli("compare", "1.0.0", "1.1.0") == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if ".patch" in line}
    assert "same change, other context" in rows["doc-feat-say-line-2.patch"]
    assert "differs" in rows["misc-feat-add-notes.patch"]
    assert "1 differ" in out and "unexplained: 1" in out
    assert two_bases.cli("check", "--base", "1.0.0", "--no-apply") == 1
    out = capsys.readouterr().out
    assert "1.1.0:misc-feat-add-notes.patch: drift: differs from 1.0.0:misc-feat-add-notes.patch" in out
    # The 1.1.0 patch says why it differs: no finding, a note.
    tree = tree_of(two_bases, "1.1.0")
    git_in(tree, "commit", "-q", "--amend", "-F", "-", input=other + "Base-Specific: 1.1.0 keeps its own notes\n")
    assert two_bases.cli("export", "--base", "1.1.0") == 0
    capsys.readouterr()
    assert two_bases.cli("check", "--base", "1.0.0", "--no-apply") == 0
    assert "1.1.0 keeps its own notes" in capsys.readouterr().out
    assert two_bases.cli("compare") == 0
    # A patch missing from the newer queue is drift, unless its to-port list names it.
    git_in(tree, "reset", "-q", "--hard", "HEAD~2")
    commit(tree, {"docs/notes.md": "notes of 1.1.0\n"}, other + "Base-Specific: 1.1.0 keeps its own notes\n")
    assert two_bases.cli("export", "--base", "1.1.0") == 0
    capsys.readouterr()
    assert two_bases.cli("check", "--base", "1.1.0", "--no-apply") == 1
    out = capsys.readouterr().out
    assert "1.0.0:doc-feat-say-line-2.patch: drift: has no counterpart in 1.1.0" in out
    (two_bases.root / "patches" / "1.1.0" / "to-port").write_text("doc-feat-say-line-2.patch\n")
    assert two_bases.cli("check", "--base", "1.1.0", "--no-apply") == 0
    assert "awaits a hand port onto 1.1.0" in capsys.readouterr().out


def test_the_printed_commands_restore_a_queue_backup(two_bases, capsys):
    queue = two_bases.root / "patches" / "1.0.0"
    assert two_bases.cli("apply", "--base", "1.0.0") == 0
    tree = tree_of(two_bases, "1.0.0")
    commit(tree, {"verl/a.py": "A = 1\n"}, message("[misc] feat: add a", extra="Prove-Exempt: x\n"))
    assert two_bases.cli("export", "--base", "1.0.0") == 0
    (queue / "to-port").write_text("other.patch\n")
    pulled = (queue / "misc-feat-add-a.patch").read_bytes().replace(b"Problem:", b"Problem: (pulled)")
    (queue / "misc-feat-add-a.patch").write_bytes(pulled)
    before = {p.name: p.read_bytes() for p in queue.iterdir()}
    commit(tree, {"verl/b.py": "B = 1\n"}, message("[misc] feat: add b", extra="Prove-Exempt: x\n"))
    assert two_bases.cli("export", "--base", "1.0.0", "--force") == 0  # overwrites patches/1.0.0, backed up first
    assert {p.name: p.read_bytes() for p in queue.iterdir()} != before
    capsys.readouterr()
    assert two_bases.cli("backups", "--base", "1.0.0") == 0
    out = capsys.readouterr().out
    steps = [ln.strip() for ln in out.splitlines() if ln.startswith("    ") and not ln.strip().startswith("#")]
    subprocess.run(" && ".join(steps), shell=True, check=True, capture_output=True)
    assert sorted(p.name for p in (two_bases.root / "patches").iterdir()) == ["1.0.0", "1.1.0"]
    assert {p.name: p.read_bytes() for p in queue.iterdir()} == before
    assert "# patches/1.0.0/ and upstream.toml as they were" in out


def test_range_diff_falls_back_to_the_refs_newest_base_whatever_verl_patches_base_says(two_bases, monkeypatch, capsys):
    upstream = two_bases.root / "upstream.toml"
    both = upstream.read_text()
    upstream.write_text(both.split('[base."1.1.0"]')[0])  # the ref declares 1.0.0 only
    assert two_bases.cli("apply", "--base", "1.0.0") == 0
    add_a = message("[misc] feat: add a", extra="Prove-Exempt: x\n")
    commit(tree_of(two_bases, "1.0.0"), {"verl/a.py": "A = 1\n"}, add_a)
    assert two_bases.cli("export", "--base", "1.0.0") == 0
    (two_bases.root / ".gitignore").write_text("build/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "1.0.0 only"]):
        git_in(two_bases.root, *args)
    upstream.write_text(both)
    monkeypatch.setenv("VERL_PATCHES_BASE", "1.1.0")
    assert two_bases.cli("apply") == 0
    commit(tree_of(two_bases, "1.1.0"), {"verl/a.py": "A = 2\n"}, add_a)
    assert two_bases.cli("export") == 0
    capsys.readouterr()
    assert two_bases.cli("range-diff", "HEAD") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert " < -:  ------- [misc] feat: add a" in out and " > 1:  " in out  # the ref's 1.0.0 queue, then 1.1.0's


def test_messages_name_the_queue_folder_and_the_build_tree_of_the_base(two_bases, capsys):
    queue = two_bases.root / "patches" / "1.0.0"
    assert two_bases.cli("apply", "--base", "1.0.0") == 0
    commit(
        tree_of(two_bases, "1.0.0"), {"verl/a.py": "A = 1\n"}, message("[misc] feat: add a", extra="Prove-Exempt: x\n")
    )
    capsys.readouterr()
    assert two_bases.cli("apply", "--base", "1.0.0") == 1  # refuse_unexported
    err = capsys.readouterr().err
    assert "build/1.0.0/verl holds work that is not in patches/1.0.0/" in err
    assert "export writes patches/1.0.0/misc-feat-add-a.patch" in err and "Commit it in build/1.0.0/verl" in err
    assert two_bases.cli("export", "--base", "1.0.0") == 0
    (queue / "series").write_text((queue / "series").read_text() + "# changed\n")
    capsys.readouterr()
    assert two_bases.cli("status", "--base", "1.0.0") == 3
    out = capsys.readouterr().out
    assert "patches/1.0.0/ or upstream.toml changed since build/1.0.0/verl was built" in out
    assert "patches/1.0.0/ changed since the tree was built" in out
    assert two_bases.cli("export", "--base", "1.0.0") == 1
    assert "refusing to export: patches/1.0.0/ changed since build/1.0.0/verl was built" in capsys.readouterr().err
    (queue / "extra.patch").write_bytes((queue / "misc-feat-add-a.patch").read_bytes())
    assert two_bases.cli("check", "--base", "1.0.0", "--no-apply") == 1
    out = capsys.readouterr().out
    assert "extra.patch: series-unused: the file is not listed in patches/1.0.0/series" in out
    (queue / "series").write_text("not a patch name\n")
    assert two_bases.cli("check", "--base", "1.0.0", "--no-apply") == 1
    assert "patches/1.0.0/series:1: 'not a patch name' is not a patch file name" in capsys.readouterr().err
