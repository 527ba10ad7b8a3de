"""What a skill asks in words: to send secrets or files out, to reveal the agent's instructions or the
environment; credentials written into it; instructions in link titles and alt text. Part of the audit of
one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from . import patterns as P
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
    """A credential in a known format; high when something nearby pushes or posts with it."""
    # every token has a run of 20 letters and digits (a private key's lines too): one look at
    # the text's shape says whether any can be there
    words = scan.words
    if scan.shape.find(b"a" * 20) < 0 or not words & _TOKEN_WORDS and not any(
            w.startswith(_TOKEN_STARTS) for w in words if len(w) >= 16):
        return
    long_words = [w for w in words if len(w) >= 16]
    found = [m for hints, rx in P.TOKENS
             if any(h in words if not h.startswith(b"^") else any(w.startswith(h[1:]) for w in long_words)
                    for h in hints)
             for m in itertools.islice(rx.finditer(scan.data), 20)]
    for m in sorted(found, key=lambda m: m.start())[:50]:
        tok = m.group()
        if tok.startswith(b"-----"):
            if P.PRIVATE_KEY_BODY.match(scan.data, m.end(), m.end() + 6000) is None:
                continue      # a header with no key under it: an example of the format
        else:
            body = tok.rsplit(b"/", 1)[-1]
            if P.PLACEHOLDER.search(body.lower()) or len(set(body)) < 12 \
                    or not any(48 <= c <= 57 for c in body) or (tok.startswith(b":") and not
                                                                 scan.data[max(0, m.start() - 10):m.start()].isdigit()):
                continue      # an example, a placeholder, or not a Telegram token
        name = next((n for pre, n in P.TOKEN_NAMES if tok.lower().startswith(pre.encode())), "a token")
        at = m.start()
        ls, le = scan.line_bounds(at)
        ws, we = ls, le
        if tok.startswith(b"-----"):
            end = scan.data.find(b"-----end", m.end(), m.end() + 20_000) if False else \
                scan.low.find(b"-----end", m.end(), m.end() + 20_000)
            if end > 0:
                we = scan.line_bounds(end)[1]
        for _ in range(8):
            if ws > 0:
                ws = scan.line_bounds(ws - 1)[0]
            if we < len(scan.data):
                we = scan.line_bounds(we + 1)[1]
        push = P.PUSH.search(scan.low, ws, we)
        sev, note = ("high", "") if push else ("medium", "")
        if scan.hidden_at(at):
            sev, note = "high", f" — {scan.hidden_at(at)}"
        elif scan.kind == "markdown" and (scan.near_negation(at, ls, le) or scan.section_is_about_attacks(at)):
            sev, note = "low", " (shown as an example or a warning)"
        what = push.group().decode("utf-8", "replace").strip(" (:") if push else ""
        line = scan.data[max(ls, at - 80):min(le, m.end() + 80)].replace(tok, tok[:8] + b"<redacted>")
        scan.add("secrets.hardcoded", sev, at, f"{name} written into the skill"
                 + (f", used to push or post ({what})" if push else "") + note, excerpt=line)


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
_TOKEN_WORDS = frozenset((b"ghp", b"gho", b"ghu", b"ghs", b"ghr", b"github", b"xoxb", b"xoxp", b"xoxa", b"xoxo", b"xoxs",
                          b"xoxr", b"sk", b"rk", b"glpat", b"npm", b"hf", b"slack", b"webhooks", b"private"))
_TOKEN_STARTS = (b"akia", b"asia", b"aiza", b"aa")
