"""A patch file as export writes it (mbox: From line, headers, message, diff, end marker), built in memory."""

from __future__ import annotations

from verl_patches.model.patch import END_MARKER

DEFAULT_BODY = "Problem: p.\n\nFix: f.\n\nTests: t.\n\nForwarded: no\n"
IDENT = "verl-patches <verl-patches@users.noreply.github.com>"


END = END_MARKER.decode()[1:]  # export's signature block: '-- ', 'verl-patches', a blank line


def mbox(subject="[megatron] fix: a thing", body=DEFAULT_BODY, files=("verl/a.py",), author=IDENT, after_sep=""):
    diff = "".join(
        f"diff --git a/{f} b/{f}\nnew file mode 100644\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{f}\n@@ -0,0 +1 @@\n+x\n"
        for f in files
    )
    text = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        f"From: {author}\nDate: Sun, 29 Nov 2026 10:00:00 +0000\nSubject: {subject}\n\n{body}---\n{after_sep}\n{diff}"
        f"{END}"
    )
    return text.encode()
