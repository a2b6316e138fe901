"""benchmarks/function_churn.py on a tiny git history: which commit rewrites a function an earlier one rewrote."""

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("function_churn", ROOT / "benchmarks" / "function_churn.py")
churn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(churn)

BASE = """import os


def first(x):
    return x + 1


class Box:
    def size(self):
        return 1
"""


def _git(repo, *args):
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "-C", str(repo), *env_args, *args], check=True, capture_output=True)


def _commit(repo, text, message):
    (repo / "verl").mkdir(exist_ok=True)
    (repo / "verl" / "mod.py").write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


def test_counts_commits_that_touch_an_already_touched_function(tmp_path, capsys):
    _git(tmp_path, "init", "-q")
    _commit(tmp_path, BASE, "base")
    _git(tmp_path, "tag", "upstream/1.0")
    one = BASE.replace("return x + 1", "return x + 2")
    _commit(tmp_path, one, "one: first")
    two = one.replace("return 1\n", "return 2\n").replace("import os\n", "import os\nimport sys\n")
    _commit(tmp_path, two, "two: Box.size and an import")
    three = two.replace("return x + 2", "return x + 3")
    _commit(tmp_path, three, "three: first again")

    assert churn.main(["--tree", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "already rewritten by patch 1: verl/mod.py:first" in out
    assert "Box.size" not in out.split("two:")[1].split("\n", 1)[1].split("three")[0]
    assert out.strip().endswith("patches that rewrite a function an earlier patch rewrote: 1 of 3")


def test_lines_map_to_the_innermost_function():
    source = "def outer():\n    def inner():\n        return 1\n    return inner\n\nX = 1\n"
    assert churn.functions_at(source, {3}) == {"outer.inner"}
    assert churn.functions_at(source, {4}) == {"outer"}
    assert churn.functions_at(source, {6}) == set()


def test_user_git_config_and_deleted_files_do_not_change_the_count(tmp_path, monkeypatch, capsys):
    config = tmp_path / "gitconfig"
    config.write_text("[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n[color]\n\tdiff = always\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, BASE, "base")
    (repo / "verl" / "gone.py").write_text("def old():\n    return 0\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: gone.py")
    _git(repo, "tag", "upstream/1.0")
    _commit(repo, BASE.replace("return x + 1", "return x + 2"), "one: first")
    (repo / "verl" / "gone.py").unlink()
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two: delete gone.py")

    assert churn.main(["--tree", str(repo)]) == 0
    out = capsys.readouterr().out
    assert " 1   1 function(s)  one: first" in out
    assert " 2   1 function(s)  two: delete gone.py" in out
