"""The materialised build tree: a git repository holding the upstream import and one commit per patch."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

from verl_patches.errors import (
    ConfigError,
    GitError,
    PatchApplyError,
    PinMismatchError,
    VerlPatchesError,
)
from verl_patches.git import scratch
from verl_patches.git.repo import Git
from verl_patches.model.patch import PROJECT_EMAIL, PROJECT_NAME, SIGNATURE, Patch
from verl_patches.model.series import unique_names
from verl_patches.model.upstream import Upstream
from verl_patches.sources.sdist import newest_mtime, read_regular, read_verified, unpack

BRANCH = "series"
# Branches the tool makes and owns: backups, rebase results, the branch of a scratch work tree.
# A branch `verl-patches` of the user's would block these (git keeps refs as paths); `scratch/` would have been
# blocked by a branch `scratch`, a common name.
TOOL_BRANCH_PREFIXES = ("backup/", "rebase/", "verl-patches/")
# The tip the tool last wrote to each branch it leaves for the user (rebase/<version>): refs/verl-patches/kept/<b>.
KEPT_REFS = "refs/verl-patches/kept/"
SHA_TRAILER = "Upstream-Sdist-Sha256"
TREE_TRAILER = "Upstream-Tree"

# Attributes that override anything the sdist ships: bytes in, bytes out.
ATTRIBUTES = "* -text !diff !merge\n"

LOCAL_CONFIG = {
    "user.name": PROJECT_NAME,
    "user.email": PROJECT_EMAIL,
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.quotePath": "true",
    "commit.gpgsign": "false",
    "tag.gpgsign": "false",
    "am.keepcr": "true",
}

# Options that make format-patch output depend on nothing but the commits.
EXPORT_OPTIONS = [
    "-c", "diff.renames=true", "-c", "diff.suppressBlankEmpty=false", "-c", "core.quotePath=true",
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
]  # fmt: skip
EXPORT_FLAGS = [
    "--zero-commit", f"--signature={SIGNATURE}", "--full-index", "--no-numbered", "--keep-subject", "--no-stat",
    "--src-prefix=a/", "--dst-prefix=b/", "--diff-algorithm=myers", "--find-renames", "-U3",
    "--inter-hunk-context=0", "--binary", "--no-notes", "--no-add-header", "--no-cover-letter",
    "--no-thread", "--no-attach", "--no-base", "--no-signoff", "--no-ext-diff", "--no-textconv",
    "--no-relative", "--no-encode-email-headers",
]  # fmt: skip
AM_OPTIONS = ["-c", "core.hooksPath=/dev/null", "-c", "apply.whitespace=nowarn", "-c", "core.autocrlf=false"]
AM_FLAGS = ["-3", "--keep-cr", "-k", "--whitespace=nowarn", "--committer-date-is-author-date", "--no-signoff"]


@dataclass
class ExportedPatch:
    name: str
    data: bytes
    patch: Patch


class BuildTree:
    """A git work tree of verl: build/verl itself, or a linked worktree of it used as scratch space."""

    def __init__(self, path: Path, branch: str = BRANCH):
        self.path = Path(path)
        self.branch = branch
        self.git = Git(self.path, own=True)
        self._readable = False

    # -- state -----------------------------------------------------------------------------------
    def exists(self) -> bool:
        """True when the folder is a git work tree; False when it is missing or empty. A folder that holds
        files but no .git is an error: it may hold work, and it is never initialised or wiped; so is a .git that
        git cannot read as a repository (GitError says what to do)."""
        if (self.path / ".git").exists() or (self.path / ".git").is_symlink():
            if not self._readable:
                self.git.run("rev-parse", "--git-dir")
                self._readable = True
            return True
        if self.path.is_dir() and any(self.path.iterdir()):
            raise VerlPatchesError(
                f"{self.path} is not a git repository (it has no .git) but holds files: nothing was changed. "
                f"It may hold work: move it away (`mv {shlex.quote(str(self.path))} "
                f"{shlex.quote(str(self.path) + '.moved')}`) and run `verl-patches apply` to build the tree afresh"
            )
        return False

    def git_dir(self) -> Path:
        """This work tree's own git folder (differs from the common one in a linked worktree)."""
        dot_git = self.path / ".git"
        return dot_git if dot_git.is_dir() else self.git.git_dir()

    def common_dir(self) -> Path:
        return Path(self.git.out("rev-parse", "--path-format=absolute", "--git-common-dir"))

    def head(self) -> str | None:
        return self.git.rev("HEAD") if self.exists() else None

    def import_commit(self, upstream: Upstream) -> str | None:
        """The import commit for this version, if it exists and has the pinned content (tree id or sdist sha256)."""
        commit = self.git.rev(f"refs/tags/{upstream.tag}") if self.exists() else None
        if not commit:
            return None
        if upstream.pins_tree:
            return commit if self.git.out("rev-parse", f"{commit}^{{tree}}") == upstream.tree else None
        message = self.git.out("log", "-1", "--format=%B", commit)
        return commit if f"{SHA_TRAILER}: {upstream.sha256}" in message else None

    def base_tag(self) -> str | None:
        """The upstream tag HEAD sits on (the newest upstream/* ancestor)."""
        if not self.exists() or not self.head():
            return None
        proc = self.git.run("describe", "--tags", "--abbrev=0", "--match", "upstream/*", "HEAD", check=False)
        return proc.stdout.decode().strip() or None

    def in_progress(self) -> list[str]:
        git_dir = self.git_dir()
        found = []
        for marker, what in (
            ("rebase-apply", "a git am or rebase is in progress (git am --abort / git rebase --abort)"),
            ("rebase-merge", "a git rebase is in progress (git rebase --abort)"),
            ("MERGE_HEAD", "a merge is in progress (git merge --abort)"),
            ("CHERRY_PICK_HEAD", "a cherry-pick is in progress (git cherry-pick --abort)"),
            ("REVERT_HEAD", "a revert is in progress (git revert --abort)"),
        ):
            if (git_dir / marker).exists():
                found.append(what)
        return found

    def dirty_paths(self) -> list[str]:
        out = self.git.out("status", "--porcelain", "--untracked-files=all")
        return [line for line in out.splitlines() if line.strip()]

    def ignored_at_imported_paths(self) -> list[str]:
        """Ignored untracked files of the work tree at paths that an upstream/* import commit tracks: a rebuild,
        which checks the import out, would overwrite them (ignored files elsewhere stay, as in any checkout)."""
        listed = self.git.out("ls-files", "-z", "--others", "--ignored", "--exclude-standard").split("\0")
        ignored = {path for path in listed if path}
        if not ignored:
            return []
        imported: set[str] = set()
        for tag in self.git.out("tag", "--list", "upstream/*").split():
            imported.update(self.git.out("ls-tree", "-r", "-z", "--name-only", tag).split("\0"))
        return sorted(ignored & imported)

    def commits_above(self, base: str, tip: str = "HEAD") -> list[tuple[str, str]]:
        out = self.git.out("log", "--reverse", "--format=%H %s", f"{base}..{tip}")
        return [tuple(line.split(" ", 1)) for line in out.splitlines() if line]  # type: ignore[misc]

    def current_branch(self) -> str | None:
        """The branch HEAD is on (short name); None when HEAD is detached."""
        ref = self.git.run("symbolic-ref", "--quiet", "HEAD", check=False).stdout.decode().strip()
        return ref.removeprefix("refs/heads/") or None

    def branch_tips(self) -> dict[str, str]:
        """Every local branch but the tool's own (backup/*, rebase/*, verl-patches/*): short name -> commit."""
        out = self.git.out("for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
        tips = dict(line.split(" ", 1) for line in out.splitlines() if line)
        return {name: tip for name, tip in tips.items() if not name.startswith(TOOL_BRANCH_PREFIXES)}

    def check_tool_branch(self, branch: str) -> None:
        """Raise when branch exists at a commit the tool did not leave there (a user's commits on it)."""
        tip = self.git.rev(f"refs/heads/{branch}") if self.exists() else None
        if tip and tip != self.git.rev(KEPT_REFS + branch):
            raise VerlPatchesError(
                f"refusing to rewrite branch {branch} of {self.path}: it is at {tip[:12]}, not where verl-patches "
                f"left it (commits made there, a branch of your own, or one an older verl-patches left without a "
                f"record). Nothing was changed. Keep them under "
                f"another name (`git -C {self.path} branch -m {branch} <new name>`), or delete the branch, then run "
                "again"
            )

    def mark_tool_branch(self, branch: str) -> None:
        tip = self.git.rev(f"refs/heads/{branch}")
        if tip:
            self.git.run("update-ref", KEPT_REFS + branch, tip)

    def unmergeable_commits(self, base: str) -> list[str]:
        """The commits above base that no patch file can hold (merges, commits that change nothing), each
        with how to fix it; empty when every commit exports as one patch."""
        out = self.git.out("log", "--reverse", "--format=%H %T %P%x00%s", f"{base}..HEAD")
        trees = {self.git.out("rev-parse", base): self.git.out("rev-parse", f"{base}^{{tree}}")}
        found = []
        for line in out.splitlines():
            ids, subject = line.split("\0", 1)
            commit, tree, *parents = ids.split()
            trees[commit] = tree
            if len(parents) > 1:
                found.append(
                    f"{commit[:12]} {subject}: is a merge; a series must be linear. Replay its commits in a line "
                    f"with `git rebase {base}` (a rebase leaves merges out)"
                )
            elif parents and trees.get(parents[0]) == tree:
                found.append(
                    f"{commit[:12]} {subject}: changes nothing (an empty commit); every patch must change a file. "
                    f"Drop it with `git rebase -i {base}` (delete its line), or squash it into another commit there"
                )
        return found

    # -- creation --------------------------------------------------------------------------------
    def init(self) -> None:
        if not self.exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self.git.run("init", "--quiet", f"--initial-branch={self.branch}")
        info = self.common_dir() / "info"
        info.mkdir(exist_ok=True)
        if not (info / "attributes").is_file() or (info / "attributes").read_text() != ATTRIBUTES:
            (info / "attributes").write_text(ATTRIBUTES)
        present = self.git.run("config", "--local", "--list", check=False).stdout.decode().splitlines()
        for key, value in LOCAL_CONFIG.items():
            if f"{key.lower()}={value}" not in present:  # an existing tree's config is not rewritten
                self.git.run("config", key, value)

    def import_upstream(
        self, upstream: Upstream, source: Path, parent: str | None = None, tag: bool = True, checkout: bool = True
    ) -> str:
        """Commit the files of the source tarball as they are (tagged upstream/<version>) and check out the commit
        (when checkout). A tag archive must give the pinned tree id; otherwise PinMismatchError, and the work tree
        is untouched."""
        what = " ".join(filter(None, [upstream.name, upstream.version]))
        if upstream.is_archive:
            subject = f"Import {what} from its {upstream.archive_name}"
            trailers = f"Upstream-Commit: {upstream.commit}\n{TREE_TRAILER}: {upstream.tree}"
        else:
            subject = f"Import {what} from its PyPI sdist"
            trailers = f"{SHA_TRAILER}: {upstream.sha256}"
        version = f"Upstream-Version: {upstream.version}\n" if upstream.version else ""
        message = f"{subject}\n\n{version}{trailers}\n"
        # Read once: an sdist is imported from the bytes its hash was checked on; an archive's pin is the tree id
        # of the files these bytes give.
        content = read_regular(source) if upstream.is_archive else read_verified(source, upstream.sha256)
        tree, _ = self._tree_of(content, label=str(source))
        if upstream.is_archive and tree != upstream.tree:
            raise PinMismatchError.tree(str(source), upstream.tree, tree)
        return self._commit_import(tree, message, content, parent, upstream.tag if tag else None, checkout)

    def tree_id(self, source: Path) -> str:
        """The git tree id of the tarball's files as an import writes them (nothing is committed or checked out)."""
        return self._tree_of(source)[0]

    def import_overlay(
        self, upstream: Upstream, sdist: Path, base: str, tag: bool = True, checkout: bool = True
    ) -> str:
        """Import an sdist-over-archive base: the sdist's files over base (the import of upstream.over), as a
        commit on top of base; its tree must be the pinned one (else PinMismatchError, work tree untouched)."""
        content = read_verified(sdist, upstream.sha256)
        tree, shipped = self._tree_of(content, over=base, label=str(sdist))
        dropped = [path for path in shipped if self._sdist_metadata(path, base)]
        if dropped:
            tree, _ = self._tree_of(content, over=base, leave_out=set(dropped), label=str(sdist))
        over = upstream.over.tag if upstream.over else base[:12]
        if tree != upstream.tree:
            raise PinMismatchError.tree(f"{sdist} laid over {over}", upstream.tree, tree)
        message = (
            f"Import {upstream.name} {upstream.version} from its PyPI sdist over {over}\n\n"
            f"Upstream-Version: {upstream.version}\n{SHA_TRAILER}: {upstream.sha256}\n"
            f"{TREE_TRAILER}: {upstream.tree}\n"
        )
        return self._commit_import(tree, message, content, base, upstream.tag if tag else None, checkout)

    def overlay_sdist(self, upstream: Upstream, sdist: Path, base: str, parent: str | None = None):
        """Commit base's files with the sdist's files written over them (nothing of base is removed).

        The sdist's build metadata (PKG-INFO, *.egg-info/, a setup.cfg that base does not have) is left out.
        Returns the commit, the paths taken from the sdist, the paths kept from base unchecked and the
        metadata paths left out."""
        content = read_verified(sdist, upstream.sha256) if upstream.sha256 else read_regular(sdist)
        tree, shipped = self._tree_of(content, over=base, label=str(sdist))
        dropped = [path for path in shipped if self._sdist_metadata(path, base)]
        if dropped:
            tree, shipped = self._tree_of(content, over=base, leave_out=set(dropped), label=str(sdist))
        kept = sorted(set(self.git.out("ls-tree", "-r", "--name-only", base).splitlines()) - set(shipped))
        message = (
            f"Import {upstream.name} {upstream.version} from its PyPI sdist over {base[:12]}\n\n"
            f"The {len(shipped)} paths the sdist ships come from it; {len(kept)} other paths are kept from "
            f"{base[:12]} unchecked.\n\nUpstream-Version: {upstream.version}\n{SHA_TRAILER}: {upstream.sha256}\n"
        )
        return self._commit_import(tree, message, content, parent, None), shipped, kept, dropped

    def _sdist_metadata(self, path: str, base: str) -> bool:
        top = path.split("/", 1)[0]
        if top.endswith(".egg-info"):
            return True
        return path in ("PKG-INFO", "setup.cfg") and not self.git.ok("cat-file", "-e", f"{base}:{path}")

    def _tree_of(
        self,
        source: Path | bytes,
        over: str | None = None,
        leave_out: AbstractSet[str] = frozenset(),
        label: str | None = None,
    ) -> tuple[str, list[str]]:
        """Write the tree of the tarball's files (a file, or its bytes named by label; on top of commit `over`, if
        given) without touching the work tree or the index; returns it and the tarball's paths (less those left
        out)."""
        self.init()
        with scratch.folder("import") as tmp:
            files = Path(tmp) / "files"
            files.mkdir()
            unpack(source, files, label)
            for path in leave_out:
                (files / path).unlink()
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            git = Git(files)
            where = ["--git-dir", str(self.git_dir()), "--work-tree", str(files)]
            if over:
                self.git.run("read-tree", over, env=env)
            git.run(*where, "add", "--force", "--ignore-removal" if over else "--all", ".", env=env)
            tree = self.git.out("write-tree", env=env)
            paths = sorted(_files_in(files))
        return tree, paths

    def _commit_import(
        self, tree: str, message: str, source: Path | bytes, parent: str | None, tag: str | None, checkout: bool = True
    ) -> str:
        date = f"{newest_mtime(source)} +0000"
        env = {
            "GIT_AUTHOR_NAME": PROJECT_NAME,
            "GIT_AUTHOR_EMAIL": PROJECT_EMAIL,
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_DATE": date,
        }
        args = ["commit-tree", tree, "-F", "-"] + (["-p", parent] if parent else [])
        commit = self.git.out(*args, input=message.encode(), env=env)
        if tag:
            self.git.run("tag", "--force", tag, commit)
        if checkout:
            self.reset_to(commit)
        return commit

    def reset_to(self, commit: str) -> None:
        # Untracked files go first, under the ignore rules of the tree as it is: ignored files stay, as in any
        # git checkout, even when the commit checked out does not ignore them yet.
        self.git.run("clean", "-ffdq")
        self.git.run("update-ref", f"refs/heads/{self.branch}", commit)
        self.git.run("symbolic-ref", "HEAD", f"refs/heads/{self.branch}")
        self.git.run("reset", "--quiet", "--hard", commit)

    # -- patches ---------------------------------------------------------------------------------
    def am(self, name: str, patch_file: Path, marker: bool = True) -> bool:
        """Apply one patch as one commit; False when it changed nothing (already applied).

        The file is checked whole first (a cut-short or CRLF file is refused before git sees it). On failure the
        am is aborted and PatchApplyError names the failing file and hunk. marker=False also takes a file without
        export's end marker (see Patch.parse)."""
        try:
            Patch.parse(name, patch_file.read_bytes(), marker=marker)
        except ConfigError as exc:
            raise PatchApplyError(name, str(exc)) from None
        before = self.head()
        proc = self.git.run(*AM_OPTIONS, "am", *AM_FLAGS, str(patch_file), check=False)
        if proc.returncode == 0:
            return self.head() != before
        detail = _am_failure(proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace"))
        if (self.git_dir() / "rebase-apply").exists():
            self.git.run("am", "--abort", check=False)
        raise PatchApplyError(name, detail)

    def ok_reverse(self, patch_file: Path) -> bool:
        """True when the patch's changes are already all present (it reverse-applies)."""
        return self.git.ok("apply", "--check", "--reverse", str(patch_file))

    def export(self, base: str) -> list[ExportedPatch]:
        """format-patch every commit above base, deterministically; names come from subjects."""
        unmergeable = self.unmergeable_commits(base)
        if unmergeable:
            listing = "\n".join(f"  - {line}" for line in unmergeable)
            raise VerlPatchesError(f"{self.path} has commits that cannot be patches of the series:\n{listing}")
        with scratch.folder("export") as tmp:
            self.git.run(*EXPORT_OPTIONS, "format-patch", *EXPORT_FLAGS, "-o", tmp, f"{base}..HEAD")
            files = sorted(Path(tmp).glob("*.patch"))
            raw = [(f.name, f.read_bytes()) for f in files]
        parsed = [Patch.parse(name, data) for name, data in raw]
        names = unique_names([p.subject for p in parsed], [p.body for p in parsed])
        result = []
        for name, (_, data), patch in zip(names, raw, parsed, strict=True):
            patch.name = name
            result.append(ExportedPatch(name=name, data=data, patch=patch))
        return result

    # -- safety ----------------------------------------------------------------------------------
    def lock_files(self) -> list[Path]:
        """Lock files a killed git command leaves behind: index, config, packed-refs, HEAD and the other
        pseudo-refs (ORIG_HEAD, FETCH_HEAD, ...) at the top of .git, and refs under refs/."""
        git_dir = self.git_dir()
        found = sorted(path for path in git_dir.glob("*.lock") if path.is_file())
        if (git_dir / "refs").is_dir():
            found += sorted((git_dir / "refs").rglob("*.lock"))
        return found

    def discard_in_progress(self) -> None:
        """End any am, rebase, merge, cherry-pick or revert in progress (take a backup first)."""
        for command in ("am", "rebase", "merge", "cherry-pick", "revert"):
            if self.in_progress():
                self.git.run(command, "--abort", check=False)
        git_dir = self.git_dir()
        for leftover in ("rebase-apply", "rebase-merge"):
            if (git_dir / leftover).is_dir():
                shutil.rmtree(git_dir / leftover)
        for leftover in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"):
            (git_dir / leftover).unlink(missing_ok=True)


def _files_in(root: Path) -> list[str]:
    """Paths (posix, relative to root) of the files and symlinks under root."""
    found = []
    for folder, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            found.append((Path(folder) / name).relative_to(root).as_posix())
    return found


# git's advice for an am it leaves in progress; the tool aborts the am, so the advice does not hold.
_AM_ADVICE = re.compile(
    r"^hint:|git am --|--show-current-patch|When you have resolved|If you prefer to skip|To restore the original"
)


def _am_failure(output: str) -> str:
    """The useful lines of a failed git am: which patch, file and hunk (not git's advice for an am in progress)."""
    lines = [line for line in output.splitlines() if line.strip() and not _AM_ADVICE.search(line)]
    keep = [
        line
        for line in lines
        if re.match(r"^(error|CONFLICT|Applying|Patch failed|fatal|Falling back|warning: Cannot merge)", line)
        or re.match(r"^Auto-merging ", line)
    ]
    return "\n".join(keep or lines) or "(git am gave no reason)"


__all__ = ["BuildTree", "ExportedPatch", "GitError"]
