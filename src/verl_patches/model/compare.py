"""Comparing two queues of the series: which patches of one have no counterpart in the other, and which differ.

Patches are paired by subject (the type word of the subject is ignored, so that a fix carried as its tests
alone still pairs with it), then by `git patch-id --stable`, then by their change (the +/- lines). A pair is
the same patch when the patch ids agree, the same change in another context when only the +/- lines agree,
and different otherwise. A patch explains a difference with the trailer `Base-Specific: <reason>`: the newer
queue's patch of a pair that differs, the patch of a queue that the other lacks (when the newer queue lacks it,
a trailer that names the newer version).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from verl_patches.model.patch import Patch

BASE_SPECIFIC = "Base-Specific"

SAME = "same"
CONTEXT = "same change, other context"
DIFFERS = "differs"

_TYPE = re.compile(r"\] [a-z]+: ")


@dataclass(frozen=True)
class Entry:
    patch: Patch
    patch_id: str  # git patch-id --stable
    change_id: str  # sha256 of the diff's file headers and +/- lines

    @property
    def reason(self) -> str | None:
        values = [v for v in self.patch.trailer_values(BASE_SPECIFIC) if v.strip()]
        return values[0] if values else None


@dataclass
class Comparison:
    old: str  # the two queues' names, e.g. 0.9.0 and 0.9.1
    new: str
    pairs: list[tuple[Entry, Entry, str]] = field(default_factory=list)
    only_old: list[Entry] = field(default_factory=list)
    only_new: list[Entry] = field(default_factory=list)

    def drift(self, pending: AbstractSet[str] = frozenset()) -> list[tuple[str, str, str | None]]:
        """(where, what, reason) for each difference; reason is the Base-Specific trailer that explains it, the
        Applied-Upstream trailer of an old patch that the new release has, the hand port it awaits (a name of the
        old queue in pending), or None when nothing does."""
        found = []
        names_new = re.compile(rf"(?<![\w.]){re.escape(self.new)}(?![\w]|\.\d)")
        for entry in self.only_old:
            trailer = entry.reason if entry.reason and names_new.search(entry.reason) else None
            applied = entry.patch.applied_upstream
            if not trailer and applied and applied.released_by(self.new):
                trailer = f"Applied-Upstream: {applied.format()}"
            reason = trailer or (f"awaits a hand port onto {self.new}" if entry.patch.name in pending else None)
            found.append((f"{self.old}:{entry.patch.name}", f"has no counterpart in {self.new}", reason))
        for entry in self.only_new:
            found.append((f"{self.new}:{entry.patch.name}", f"has no counterpart in {self.old}", entry.reason))
        for a, b, level in self.pairs:
            if level == DIFFERS:
                reason = b.reason
                found.append((f"{self.new}:{b.patch.name}", f"differs from {self.old}:{a.patch.name}", reason))
        return found


def subject_key(subject: str) -> str:
    return _TYPE.sub("] ", subject, count=1).strip().lower()


def change_id(diff: bytes) -> str:
    """A hash of what the diff changes, independent of its context lines, line numbers and index lines."""
    digest = hashlib.sha256()
    for line in diff.splitlines():
        if line.startswith((b"diff --git ", b"+", b"-")) and not line.startswith((b"--- ", b"+++ ")):
            digest.update(line.rstrip() + b"\n")
        elif line == b"-- ":  # format-patch's signature separator ends the diff
            break
    return digest.hexdigest()


def diff_part(data: bytes) -> bytes:
    at = data.find(b"\ndiff --git ")
    return b"" if at < 0 else data[at + 1 :]


def compare(old_name: str, old: list[Entry], new_name: str, new: list[Entry]) -> Comparison:
    result = Comparison(old_name, new_name)
    left = list(old)
    right = list(new)
    for key in (lambda e: subject_key(e.patch.subject), lambda e: e.patch_id, lambda e: e.change_id):
        for a in list(left):
            match = next((b for b in right if key(b) == key(a)), None)
            if match is None:
                continue
            left.remove(a)
            right.remove(match)
            if a.patch_id == match.patch_id:
                level = SAME
            elif a.change_id == match.change_id:
                level = CONTEXT
            else:
                level = DIFFERS
            result.pairs.append((a, match, level))
    order = {e.patch.name: n for n, e in enumerate(new)}
    result.pairs.sort(key=lambda pair: order[pair[1].patch.name])
    result.only_old = left
    result.only_new = right
    return result
