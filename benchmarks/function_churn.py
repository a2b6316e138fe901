"""Which patches rewrite a function that an earlier patch of the series already rewrote. Prints figures.

    python benchmarks/function_churn.py [--tree build/0.9.0/verl] [--base upstream/0.9.0] [--head HEAD] [--paths verl/]

For each commit above the base (one per patch, in series order), `git diff -U0` gives the changed
lines of every Python file under the given paths; each changed line is mapped, with `ast`, to the
innermost function or method that contains it (qualified name, e.g. `util.py:Foo.bar`): deleted
lines in the parent's version of the file, added lines in the commit's version. Lines outside any
function (imports, module constants) are not counted. A patch "rewrites a function another patch
already rewrote" when one of its functions is in the union of the earlier patches' functions. The
last line is that count.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True).stdout


def function_spans(source: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and method, outermost first."""
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                if not isinstance(child, ast.ClassDef):
                    spans.append((first, child.end_lineno or child.lineno, name))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return spans


def functions_at(source: str, lines: set[int]) -> set[str]:
    """Innermost function containing each of `lines` (1-based)."""
    found = set()
    spans = function_spans(source)
    for line in lines:
        inner = [s for s in spans if s[0] <= line <= s[1]]
        if inner:
            found.add(max(inner, key=lambda s: s[0])[2])
    return found


def changed_lines(diff: str) -> dict[str, tuple[set[int], set[int]]]:
    """Per file of a `git diff -U0` (with --no-renames): (deleted old lines, added new lines)."""
    result: dict[str, tuple[set[int], set[int]]] = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("--- "):
            path = None if line == "--- /dev/null" else line[6:]
        elif line.startswith("+++ ") and line != "+++ /dev/null":
            path = line[6:]  # a deleted file keeps the old path: its deleted lines still count
        elif (match := HUNK.match(line)) and path:
            old_start, old_len, new_start, new_len = match.groups()
            old = set(range(int(old_start), int(old_start) + int(old_len if old_len is not None else 1)))
            new = set(range(int(new_start), int(new_start) + int(new_len if new_len is not None else 1)))
            deleted, added = result.setdefault(path, (set(), set()))
            deleted |= old
            added |= new
    return result


def show(tree: Path, rev: str, path: str) -> str:
    proc = subprocess.run(["git", "-C", str(tree), "show", f"{rev}:{path}"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else ""


def patch_functions(tree: Path, commit: str, paths: list[str]) -> set[str]:
    # Explicit prefixes and no colour or external diff: the user's git config must not change the parse.
    neutral = ["--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/"]
    diff = git(tree, "diff", "-U0", "--no-renames", *neutral, f"{commit}^", commit, "--", *paths)
    touched = set()
    for path, (deleted, added) in changed_lines(diff).items():
        if not path.endswith(".py"):
            continue
        for rev, lines in ((f"{commit}^", deleted), (commit, added)):
            source = show(tree, rev, path)
            if source and lines:
                touched |= {f"{path}:{name}" for name in functions_at(source, lines)}
    return touched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, help="the build tree (default: build/<base>/verl of the tool's base)")
    parser.add_argument("--base", default=None, help="default: the tree's upstream/* tag")
    parser.add_argument("--head", default="HEAD", help="last commit of the series (default: HEAD)")
    parser.add_argument("--paths", nargs="*", default=["verl/"])
    args = parser.parse_args(argv)
    if args.tree is None:
        from _trees import default_tree

        args.tree = default_tree()
    base = args.base or git(args.tree, "describe", "--tags", "--abbrev=0", "--match", "upstream/*").strip()
    commits = git(args.tree, "rev-list", "--reverse", f"{base}..{args.head}").split()
    seen: dict[str, str] = {}
    repeats = 0
    for n, commit in enumerate(commits, 1):
        subject = git(args.tree, "log", "-1", "--format=%s", commit).strip()
        touched = patch_functions(args.tree, commit, args.paths)
        again = sorted(f for f in touched if f in seen)
        repeats += bool(again)
        print(f"{n:>2} {len(touched):>3} function(s)  {subject}")
        for name in again:
            print(f"     already rewritten by patch {seen[name]}: {name}")
        for name in touched:
            seen.setdefault(name, str(n))
    print(f"patches that rewrite a function an earlier patch rewrote: {repeats} of {len(commits)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
