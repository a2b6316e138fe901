"""watch.yml replayed with a fake index that lists a newer verl (0.9.2): it rebases the newest queue onto that
release's tag archive, compares the queues, commits the new queue on a branch and stops before the push and the
pull request (printed, never run: the `gh` stub fails the test when called)."""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import sys
import threading

import pytest
import yaml
from helpers import FAKE_COMMIT, make_archive, make_sdist
from helpers.ci_replay import BASES, ROOT, failures, replay, step_output
from helpers.fake_index import write_index
from helpers.mbox import mbox
from helpers.replay import Replay

from verl_patches.sources.index import Index

NEW = "0.9.2"
BACKPORT = (
    "[misc] fix: a backport (backport of verl#5)",
    "Problem: p.\n\nFix: f.\n\nTests: t.\n\nOrigin: backport, https://github.com/verl-project/verl/pull/5\n"
    f"Forwarded: not-needed\nApplied-Upstream: {NEW}\nProve-Exempt: docs only\n",
)
NOTES = ("[doc] feat: add notes", "Problem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\nProve-Exempt: docs only\n")


def git(workspace, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=workspace, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def new_release(runner, tmp_path):
    """The replay's fake index lists verl 0.9.2 on PyPI and as a GitHub tag whose archive the mirror holds; the
    0.9.1 queue holds a backport that 0.9.2 has (Applied-Upstream) and a docs patch."""
    cache = runner.temp.parent / "cache"
    sdists = {version: cache / f"verl-{version}.tar.gz" for version in BASES}
    sdists[NEW] = make_sdist(tmp_path / "pypi-files", NEW)
    write_index(runner.temp.parent / "index", sdists, [f"v{version}" for version in sdists])
    make_archive(tmp_path / "mirror", NEW)
    queue = runner.workspace / "patches" / BASES[-1]
    for n, (subject, body) in enumerate([BACKPORT, NOTES], start=1):
        (queue / f"{n}.patch").write_bytes(mbox(subject=subject, body=body, files=(f"docs/{n}.md",)))
    (queue / "series").write_text("1.patch\n2.patch\n")
    runner.env.update(VERL_PATCHES_MIRROR=str(tmp_path / "mirror"), VERL_PATCHES_PYTHON=sys.executable)
    return runner


@pytest.mark.parametrize(
    ("ci_dry_run", "given"), [("1", {}), ("0", {"dry_run": "true"})], ids=["CI_DRY_RUN", "dry_run-input"]
)
def test_a_new_release_is_rebased_and_proposed_without_a_network_write(new_release, ci_dry_run, given):
    new_release.env["CI_DRY_RUN"] = ci_dry_run
    new_release.given = given
    results = replay(new_release, ROOT / ".github" / "workflows" / "watch.yml")
    assert not failures(results), "\n".join(failures(results))
    steps = [r.name for rs in results.values() for r in rs]
    assert steps[-2:] == ["Compare the new queue with the old one", "Open or update the draft pull request"]
    assert f"newer release: {NEW}" in step_output(results, "Ask PyPI", "follow")
    rebase = step_output(results, "Rebase the newest queue", "follow")
    assert f"- new tag archive: verl-project/verl v{NEW}, tree `" in rebase
    assert "applied upstream" in rebase and "applies cleanly" in rebase
    assert f"+ (dry run) .venv/bin/verl-patches test --base {NEW}" in step_output(results, "Run the new", "follow")
    propose = step_output(results, "Open or update", "follow")
    assert f"+ (dry run, not run) git push --force origin follow/verl-{NEW}" in propose
    assert f"+ (dry run, not run) gh pr create --draft --head follow/verl-{NEW}" in propose
    workspace = new_release.workspace
    assert git(workspace, "branch", "--show-current").strip() == f"follow/verl-{NEW}"
    committed = git(workspace, "show", "--name-only", "--format=", "HEAD").split()
    assert committed == [f"patches/{NEW}/doc-feat-add-notes.patch", f"patches/{NEW}/series", "upstream.toml"]
    table = git(workspace, "show", "HEAD:upstream.toml").split(f'[base."{NEW}"]\n', 1)[1]
    assert (
        f'source = "git-archive"\nrepository = "verl-project/verl"\ntag = "v{NEW}"\ncommit = "{FAKE_COMMIT}"' in table
    )
    body = (workspace / "build" / "follow" / "pr-body.md").read_text()
    assert f"## Rebase report\n\n- command: `verl-patches rebase --onto {NEW} " in body
    assert "not checked against anything known before: review them" in body and f'tag = "v{NEW}"' in body
    assert "fixed upstream: dropped" in body and f"compare {BASES[-1]} {NEW}`: exit status 0." in body
    assert f"CPU tests (`verl-patches test --base {NEW}`): not run." in body
    assert not (workspace / "build" / "venv").exists()


BOT = "41898283+github-actions[bot]@users.noreply.github.com"


@pytest.mark.parametrize(
    ("author", "shallow", "overwritten"),
    [(BOT, False, True), ("person@example.com", False, False), (BOT, True, True), ("person@example.com", True, False)],
    ids=["bot", "person", "bot-shallow-checkout", "person-shallow-checkout"],
)
def test_propose_never_overwrites_a_branch_that_people_committed_to(tmp_path, author, shallow, overwritten):
    """ci/follow.sh propose without a dry run, against a local origin whose follow branch has a commit by author.
    shallow: the workflow's checkout is a depth-1 clone (as actions/checkout makes it) of a main that moved on
    after the follow branch was made, so that the branch's base is not in the checkout's history."""
    seed, work, origin = tmp_path / "seed", tmp_path / "work", tmp_path / "origin.git"
    (seed / "ci").mkdir(parents=True)
    shutil.copy2(ROOT / "ci" / "follow.sh", seed / "ci" / "follow.sh")
    (seed / ".gitignore").write_text("build/\n.venv\n")
    ident = ["-c", "user.name=someone", "-c", f"user.email={author}"]
    people = ["-c", "user.name=a person", "-c", "user.email=person@example.com"]
    git(tmp_path, "init", "-q", "--bare", str(origin))
    for args in (["init", "-q", "-b", "main"], ["add", ".gitignore", "ci"], [*people, "commit", "-qm", "main"],
                 ["remote", "add", "origin", str(origin)], ["push", "-q", "origin", "main"],
                 ["switch", "-qc", "follow/verl-1.1.0"], [*ident, "commit", "-q", "--allow-empty", "-m", "old"],
                 ["push", "-q", "origin", "follow/verl-1.1.0"], ["switch", "-q", "main"],
                 [*people, "commit", "-q", "--allow-empty", "-m", "main moves on"],
                 ["push", "-q", "origin", "main"]):  # fmt: skip
        git(seed, *args)
    if shallow:
        git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", f"file://{origin}", str(work))
        assert git(work, "rev-parse", "--is-shallow-repository").strip() == "true"
    else:
        shutil.copytree(seed, work, symlinks=True)
    (work / ".venv").symlink_to(sys.prefix)
    (work / "upstream.toml").write_text('[base."1.1.0"]\nname = "verl"\n')
    (work / "patches" / "1.1.0").mkdir(parents=True)
    (work / "patches" / "1.1.0" / "series").write_text("# series\n")
    (work / "build" / "follow").mkdir(parents=True)
    (work / "build" / "follow" / "watch.env").write_text("WATCH_BASE=1.0.0\nWATCH_VERSION=1.1.0\n")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "gh").write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/gh.calls"\n')
    (stubs / "gh").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "CI_DRY_RUN": "0", "WATCH_DRY_RUN": ""}
    proc = subprocess.run(["bash", "ci/follow.sh", "propose"], cwd=work, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tip = git(origin, "log", "-1", "--format=%s", "follow/verl-1.1.0").strip()
    calls = (stubs / "gh.calls").read_text() if (stubs / "gh.calls").exists() else ""
    if overwritten:
        assert tip == "patches: follow verl 1.1.0 (rebase of the 1.0.0 queue)", proc.stdout
        assert "pr create --draft --head follow/verl-1.1.0 " in calls
    else:
        assert "follow/verl-1.1.0 holds 1 commit(s) by others: left as it is" in proc.stdout
        assert tip == "old" and calls == ""


def test_the_watch_step_asks_githubs_api_with_the_workflows_token():
    """Without a token GitHub's REST API allows 60 requests an hour per IP address, which hosted runners share: a
    rate-limited answer would leave the tag list (and the pull request states) out of the weekly run."""
    data = yaml.safe_load((ROOT / ".github" / "workflows" / "watch.yml").read_text())
    (step,) = [s for s in data["jobs"]["follow"]["steps"] if s.get("run") == "make ci-follow-watch"]
    assert (step.get("env") or {}).get("GITHUB_TOKEN") == "${{ github.token }}"


def test_github_token_is_sent_to_githubs_api_only(tmp_path, monkeypatch):
    seen = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen.append((self.path, self.headers.get("Authorization")))
            body = b"[]" if "/tags" in self.path else b'{"releases": {}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
        index = Index(pypi=f"{url}/pypi", github=f"{url}/github")
        index.pypi_project("verl")
        index.github_tags("verl-project/verl")
    finally:
        server.shutdown()
        server.server_close()
    assert seen == [("/pypi/verl/json", None), ("/github/repos/verl-project/verl/tags?per_page=100", "Bearer t0ken")]


@pytest.mark.parametrize(("secrets", "token"), [({"FOLLOW_TOKEN": "app-token"}, "app-token"), ({}, "workflow-token")])
def test_the_push_and_the_pull_request_use_the_follow_token_when_it_is_set(tmp_path, secrets, token):
    """A push or pull request made with the workflow's own token starts no workflow run on the new queue."""
    runner = Replay(workflow=ROOT / ".github" / "workflows" / "watch.yml", workspace=ROOT, temp=tmp_path)
    runner.secrets = secrets
    data = runner.load()
    job = data["jobs"]["follow"]
    context = {**runner.context(job, data, None), "github": {"token": "workflow-token"}}
    (checkout,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout")]
    (propose,) = [s for s in job["steps"] if s.get("run") == "make ci-follow-propose"]
    assert runner.expand(checkout["with"]["token"], context, "checkout") == token
    assert runner.expand(propose["env"]["GH_TOKEN"], context, "propose") == token
