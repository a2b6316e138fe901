#!/usr/bin/env bash
# Steps of the watch workflow (.github/workflows/watch.yml), called through make ci-follow-* targets: follow verl.
# Usage: ci/follow.sh STEP   (watch, rebase, test, compare, propose)
#   watch    asks PyPI and GitHub for a verl release newer than the newest base (verl-patches watch --prs); a
#            newer one is written to $FOLLOW_DIR/watch.env, which the later steps read; without one they do nothing
#   rebase   rebase --onto X --write from the newest base's queue: the new queue patches/X and its upstream.toml
#            table (GitHub's archive of X's tag when it has one, pinned from the download; else its PyPI sdist)
#   test     the new queue's CPU tests (verl-patches test --base X)
#   compare  verl-patches compare <newest base> X
#   propose  commits the new queue on branch follow/verl-X, pushes it and opens (or updates) a draft pull request
#            whose body is the reports ($FOLLOW_DIR/pr-body.md)
# Dry run (CI_DRY_RUN=1, or WATCH_DRY_RUN=true from the workflow's input): the tests are not run and nothing is
# written over the network: the push and the gh commands are printed instead. The rest runs as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOL=.venv/bin/verl-patches
OUT=${FOLLOW_DIR:-build/follow}
BODY_LIMIT=60000 # GitHub refuses a pull request body over 65536 characters
FENCE="\`\`\`"

die() {
    echo "ci/follow.sh: $*" >&2
    exit 1
}

DRY=0
case "${CI_DRY_RUN:-0}" in
0 | "") ;;
1) DRY=1 ;;
*) die "CI_DRY_RUN must be 0 or 1, not '${CI_DRY_RUN}'" ;;
esac
case "${WATCH_DRY_RUN:-false}" in
false | False | 0 | "") ;;
true | True | 1) DRY=1 ;;
*) die "WATCH_DRY_RUN must be true or false, not '${WATCH_DRY_RUN}'" ;;
esac

# A command that writes over the network: printed, not run, in a dry run.
remote() {
    if [ "$DRY" = 1 ]; then
        echo "+ (dry run, not run) $*"
    else
        echo "+ $*"
        "$@"
    fi
}

# A value watch wrote (empty when it found no newer release).
get() {
    [ -f "$OUT/watch.env" ] || return 0
    sed -n "s/^$1=//p" "$OUT/watch.env" | tail -n 1
}

VERSION=$(get WATCH_VERSION)
BASE=$(get WATCH_BASE)
[ -x "$TOOL" ] || die "$TOOL is missing: run make tool first"

# Run a tool command, keeping its output in a file and its exit status in <file>.status.
record() {
    local file=$1
    shift
    set +e
    "$@" 2>&1 | tee "$file"
    local status=${PIPESTATUS[0]}
    set -e
    echo "$status" >"$file.status"
    return 0
}

status_of() {
    if [ -f "$1.status" ]; then echo "exit status $(cat "$1.status")"; else echo "not run"; fi
}

fenced() {
    printf '\n<details><summary>%s</summary>\n\n%stext\n' "$1" "$FENCE"
    if [ -f "$2" ]; then tail -n "${3:-200}" "$2"; else echo "(no output)"; fi
    printf '%s\n\n</details>\n' "$FENCE"
}

body() {
    local table
    table=$(sed -n "/^\[base\.\"$VERSION\"\]/,/^\$/p" upstream.toml)
    echo "verl $VERSION is released (\`verl-patches watch\`); this draft pull request is \`verl-patches rebase --onto $VERSION --write\` of the $BASE queue, for a person to review."
    echo
    echo "- \`upstream.toml\` declares the base $VERSION. Its pins were computed on the workflow's runner from what it downloaded, not checked against anything known before: review them."
    echo
    printf '%stoml\n%s\n%s\n\n' "$FENCE" "$table" "$FENCE"
    local ported=0
    [ -f "patches/$VERSION/to-port" ] && ported=$(grep -cv '^#\|^$' "patches/$VERSION/to-port" || true)
    echo "- \`patches/$VERSION\`: $(grep -cv '^#\|^$' "patches/$VERSION/series" || true) patch(es); $ported in \`to-port\`, to port by hand."
    echo "- The new queue's CPU tests (\`verl-patches test --base $VERSION\`): $(status_of "$OUT/test.log")."
    echo "- \`verl-patches compare $BASE $VERSION\`: $(status_of "$OUT/compare.txt")."
    echo
    echo "## Rebase report"
    echo
    if [ -f "$OUT/rebase.md" ]; then sed '1{/^# /d};2{/^$/d}' "$OUT/rebase.md"; else echo "(no report)"; fi
    if [ -f "patches/$VERSION/to-port" ]; then
        printf '\n## to-port\n\n%stext\n' "$FENCE"
        cat "patches/$VERSION/to-port"
        printf '%s\n' "$FENCE"
    fi
    fenced "compare" "$OUT/compare.txt"
    fenced "the new queue's CPU tests (last 80 lines)" "$OUT/test.log" 80
    fenced "watch" "$OUT/watch.txt"
}

step=${1:-}
case "$step" in
watch)
    mkdir -p "$OUT"
    rm -f "$OUT/watch.env"
    set +e
    "$TOOL" watch --prs --write-env "$OUT/watch.env" 2>&1 | tee "$OUT/watch.txt"
    status=${PIPESTATUS[0]}
    set -e
    case "$status" in
    0) echo "up to date: the later steps have nothing to do" ;;
    3) echo "newer release: $(get WATCH_VERSION)" ;;
    4) die "neither PyPI nor GitHub could be asked (see above)" ;;
    *) die "verl-patches watch failed (exit status $status)" ;;
    esac
    ;;
rebase)
    [ -n "$VERSION" ] || { echo "no newer release: nothing to rebase"; exit 0; }
    tag=$(get WATCH_TAG)
    sha=$(get WATCH_SHA256)
    "$TOOL" apply --base "$BASE"
    args=(rebase --onto "$VERSION" --base "$BASE" --report "$OUT/rebase.md" --write)
    if [ -n "$tag" ]; then
        args+=(--tag-archive "$tag")
    elif [ -n "$sha" ]; then
        args+=(--sha256 "$sha")
    fi
    record "$OUT/rebase.log" "$TOOL" "${args[@]}"
    # Exit status 1 also means "some patches need a hand port": the queue is written all the same.
    [ -f "patches/$VERSION/series" ] || die "rebase wrote no queue patches/$VERSION ($(status_of "$OUT/rebase.log"))"
    ;;
test)
    [ -n "$VERSION" ] || { echo "no newer release: nothing to test"; exit 0; }
    if [ "$DRY" = 1 ]; then
        echo "+ (dry run) $TOOL test --base $VERSION"
        exit 0
    fi
    record "$OUT/test.log" "$TOOL" test --base "$VERSION"
    ;;
compare)
    [ -n "$VERSION" ] || { echo "no newer release: nothing to compare"; exit 0; }
    record "$OUT/compare.txt" "$TOOL" compare "$BASE" "$VERSION"
    ;;
propose)
    [ -n "$VERSION" ] || { echo "no newer release: no pull request"; exit 0; }
    branch=follow/verl-$VERSION
    title="patches: follow verl $VERSION (rebase of the $BASE queue)"
    body >"$OUT/pr-body.full.md"
    head -c "$BODY_LIMIT" "$OUT/pr-body.full.md" >"$OUT/pr-body.md"
    if [ "$(wc -c <"$OUT/pr-body.full.md")" -gt "$BODY_LIMIT" ]; then
        printf '\n\n(cut at %s characters: the whole body is in the run'"'"'s artifact)\n' "$BODY_LIMIT" >>"$OUT/pr-body.md"
    fi
    bot="41898283+github-actions[bot]@users.noreply.github.com"
    # A branch that holds commits by people (hand ports, say) is never overwritten. actions/checkout clones with
    # depth 1: without main's history, HEAD..FETCH_HEAD would also list main's commits older than HEAD.
    unshallow=()
    [ "$(git rev-parse --is-shallow-repository)" != true ] || unshallow=(--unshallow)
    if [ "$DRY" != 1 ] && git fetch --quiet "${unshallow[@]}" origin "refs/heads/$branch" 2>/dev/null; then
        others=$(git log --format=%ae "HEAD..FETCH_HEAD" | grep -cvxF "$bot" || true)
        if [ "$others" != 0 ]; then
            echo "$branch holds $others commit(s) by others: left as it is (not pushed, its pull request not edited);"
            echo "the reports are in $OUT and in the run's artifact"
            exit 0
        fi
    fi
    git switch --quiet -C "$branch"
    git add upstream.toml "patches/$VERSION"
    git -c user.name="github-actions[bot]" -c user.email="$bot" commit --quiet -m "$title"
    echo "committed the new queue on branch $branch: $(git rev-parse --short HEAD)"
    remote git push --force origin "$branch"
    if [ "$DRY" = 1 ]; then
        echo "+ (dry run, not run) gh pr create --draft --head $branch --title '$title' --body-file $OUT/pr-body.md" \
            "(or gh pr edit, when a pull request from $branch is open)"
        exit 0
    fi
    number=$(gh pr list --head "$branch" --state open --json number --jq '.[0].number // empty')
    if [ -n "$number" ]; then
        remote gh pr edit "$number" --title "$title" --body-file "$OUT/pr-body.md"
    else
        remote gh pr create --draft --head "$branch" --title "$title" --body-file "$OUT/pr-body.md"
    fi
    ;;
*)
    die "unknown step '${step}' (watch, rebase, test, compare, propose)"
    ;;
esac
