"""What a skill asks in words: to send secrets or files out, to reveal the agent's instructions or the
environment; credentials written into it; instructions in link titles and alt text. Part of the audit of
one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from . import credentials, patterns as P
from .rules import RULES

# the file's Scan (skillshelf.supply.scan), which calls these functions: typed loosely, as importing it
# here would make a circle
Scan = Any


def check_requests(scan: Scan) -> None:
    """A request in words to publish secrets (a gist, a paste, an issue), and to reveal the agent's
    instructions or the environment. A request to send them to a URL is read by the model of
    intent (``skillshelf.supply.intent``)."""
    if scan.words & _PUBLISH_WORDS:
        for s, e in scan.candidates(P.TRIG_PUBLISH, "secrets published"):
            hit = P.EXFIL_PUBLISH.search(scan.low, s, e)
            if hit is not None:
                at = hit.start()
                sev, note = scan.grade_phrase("exfil.request", at)
                if scan.kind != "markdown" and not scan.hidden_at(at):
                    sev = "medium"
                scan.add("exfil.request", sev, at, f"{RULES['exfil.request'].title}: "
                         f"{scan._shown(at, hit.group())!r} (published where anyone with the link reads it){note}")
    if not scan.words & _DISCLOSE_WORDS:
        return
    for s, e in scan.candidates(P.TRIG_DISCLOSE, "requests to reveal secrets"):
        for m in P.DISCLOSE.finditer(scan.low, s, e):
            at = m.start()
            sev, note = scan.grade_phrase("override.disclose", at)
            scan.add("override.disclose", sev, at, f"{RULES['override.disclose'].title}: "
                     f"{scan._shown(at, m.group())!r}{note}")
            break


def sentence(scan: Scan, s: int, e: int) -> tuple[int, int]:
    """The sentence around ``s``..``e``: it ends at a full stop, a blank line, a list item or
    a heading, and at most 400 bytes either side."""
    lo, hi = max(0, s - 400), min(len(scan.low), e + 400)
    a = lo
    for b in _SENTENCE_BREAK.finditer(scan.low, lo, s):
        a = b.start() + 1
    m = _SENTENCE_BREAK.search(scan.low, e, hi)
    return a, (m.start() + 1 if m else hi)


def check_tokens(scan: Scan) -> None:
    """A credential in a known format (``skillshelf.supply.credentials``)."""
    credentials.check(scan)


def check_link_text(scan: Scan) -> None:
    for s, e, what in scan.linktext:
        if any(s <= p < e for p in scan._found_at):
            continue          # what is hidden there is reported (high) by its own rule
        body = scan.low[s:e]
        if len(body.split(None, 6)) >= 6 and P.ADDRESSES_AGENT.search(body) \
                and len(P.INSTRUCTION_LIKE.findall(body, 0, 4000)) >= 2:
            scan.add("hidden.link-text", scan._hidden_severity(s, e), s,
                     f"{what} that reads like instructions: the agent reads it, a reader of the rendered skill "
                     "does not", excerpt=scan.data[s:min(e, s + 300)])


_SENTENCE_BREAK = re.compile(rb"[.!?;][ \n]|\n(?=[\n\-*#|`])")
_DISCLOSE_WORDS = frozenset((b"prompt", b"instructions", b"rules", b"configuration", b"environment", b"env", b"keys",
                             b"secrets", b"credentials", b"tokens", b"passwords", b"context"))
_PUBLISH_WORDS = frozenset((b"gist", b"paste", b"pastebin", b"issue", b"comment", b"discussion"))
