"""watch: newer verl releases from a fake PyPI JSON API and a fake GitHub tag list on localhost; --prs."""

from __future__ import annotations

import pytest
from helpers import make_sdist, sha256
from helpers.fake_index import closed_port_url, serve, write_index
from helpers.mbox import mbox

from verl_patches.model.releases import BadIndexDocument, github_tags, pull_state, pypi_releases

PR = "https://github.com/verl-project/verl/pull/{}"


@pytest.fixture
def index(tmp_path):
    """(files folder, URL) of a fake index served while the test runs."""
    root = tmp_path / "index"
    root.mkdir()
    with serve(root) as url:
        yield root, url


def watch(checkout, url: str | None, *args: str, pypi: str | None = None, github: str | None = None) -> int:
    pypi = pypi or f"{url}/pypi"
    github = github or f"{url}/github"
    return checkout.cli("watch", "--pypi", pypi, "--github-api", github, *args)


def test_a_newer_release_on_both_indexes(checkout, index, tmp_path, capsys):
    root, url = index
    new = make_sdist(tmp_path / "sdists", "1.1.0")
    write_index(
        root, {"0.9.0": None, "1.0.0": checkout.cache / "verl-1.0.0.tar.gz", "1.1.0": new}, ["v1.0.0", "v1.1.0"]
    )
    env = tmp_path / "github-env"
    env.write_text("KEPT=1\n")
    assert watch(checkout, url, "--write-env", str(env)) == 3
    out = capsys.readouterr().out
    assert "newer verl release(s) than the newest base 1.0.0 (asked PyPI and GitHub's tags):" in out
    assert f"  1.1.0 (PyPI sdist sha256 {sha256(new)}; GitHub tag v1.1.0)" in out
    written = f"WATCH_BASE=1.0.0\nWATCH_VERSION=1.1.0\nWATCH_SHA256={sha256(new)}\nWATCH_TAG=v1.1.0\n"
    assert env.read_text() == "KEPT=1\n" + written


@pytest.mark.parametrize(
    ("releases", "yanked", "tags"),
    [
        ({"1.0.0": None}, (), ["v1.0.0", "v0.9.0"]),
        ({"1.0.0": None, "1.1.0rc1": None, "1.0.1.dev1": None, "1.2.0": None}, ("1.2.0",), ["v1.1.0rc1", "nightly"]),
    ],
    ids=["nothing-newer", "only-pre-dev-yanked-or-not-versions"],
)
def test_up_to_date(checkout, index, tmp_path, capsys, releases, yanked, tags):
    root, url = index
    write_index(root, releases, tags, yanked=yanked)
    env = tmp_path / "env"
    assert watch(checkout, url, "--write-env", str(env)) == 0
    assert "up to date: no verl release newer than 1.0.0 (asked PyPI and GitHub's tags)" in capsys.readouterr().out
    assert not env.exists()


def test_one_index_unreachable_is_named_and_the_other_still_counts(checkout, index, capsys):
    root, url = index
    write_index(root, releases=None, tags=["v1.0.0", "v1.0.1"])  # PyPI answers 404
    assert watch(checkout, url) == 3
    captured = capsys.readouterr()
    assert f"PyPI ({url}/pypi) could not be asked: {url}/pypi/verl/json: HTTP 404" in captured.err
    assert "(asked GitHub's tags)" in captured.out and "1.0.1 (GitHub tag v1.0.1)" in captured.out


def test_both_indexes_unreachable(checkout, capsys):
    nowhere = closed_port_url()
    assert watch(checkout, None, pypi=nowhere, github=f"{nowhere}/api") == 4
    captured = capsys.readouterr()
    assert f"PyPI ({nowhere}) could not be asked" in captured.err
    assert f"GitHub ({nowhere}/api, verl-project/verl) could not be asked" in captured.err
    assert "neither PyPI nor GitHub could be asked" in captured.out


def test_the_environment_names_the_indexes_and_tags_are_read_page_by_page(checkout, index, monkeypatch, capsys):
    root, url = index
    write_index(root, {"1.0.0": None}, [["v0.8.0", "v1.0.0"], ["v0.7.0"], ["v1.0.2"]])
    monkeypatch.setenv("VERL_PATCHES_PYPI_URL", f"{url}/pypi")
    monkeypatch.setenv("VERL_PATCHES_GITHUB_API", f"{url}/github/")
    assert checkout.cli("watch") == 3
    assert "  1.0.2 (GitHub tag v1.0.2)" in capsys.readouterr().out


def test_prs_reads_the_state_of_each_forwarded_pull_request(checkout, index, capsys):
    root, url = index
    pulls = {1: {"state": "closed", "merged": True}, 2: {"state": "open", "merged": False}}
    write_index(root, {"1.0.0": None}, ["v1.0.0"], pulls=pulls)
    names = []
    for n, forwarded in enumerate([PR.format(1), PR.format(2), PR.format(3), "no"], start=1):
        body = f"Problem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: {forwarded}\n"
        names.append(f"p{n}.patch")
        (checkout.root / "patches" / names[-1]).write_bytes(mbox(subject=f"[misc] fix: {n}", body=body))
    (checkout.root / "patches" / "series").write_text("\n".join(names) + "\n")
    assert watch(checkout, url, "--prs") == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith("https://")}
    assert rows == {PR.format(1): "merged", PR.format(2): "open", PR.format(3): "unknown"}
    assert f"merged: {PR.format(1)}; once a release has it, add 'Applied-Upstream: <that version>, " in out
    assert "1.0.0:p1.patch" in out and "p4.patch" not in out


@pytest.mark.parametrize(
    ("parse", "document"),
    [(pypi_releases, []), (pypi_releases, {"info": {}}), (github_tags, {"message": "rate limited"}),
     (pull_state, {"message": "Not Found"}), (pull_state, {"state": "draft"})],
)  # fmt: skip
def test_documents_of_another_shape_are_refused(parse, document):
    with pytest.raises(BadIndexDocument):
        parse(document)


def test_an_index_answering_another_shape_counts_as_unreachable(checkout, index, capsys):
    root, url = index
    (root / "pypi" / "verl").mkdir(parents=True)
    (root / "pypi" / "verl" / "json").write_text("[1, 2]")
    write_index(root, tags=["v1.0.0"])
    assert watch(checkout, url) == 0
    assert "PyPI's answer has no 'releases' mapping; going on without it" in capsys.readouterr().err
