"""Invisible characters in a file: zero-width, tag and variation-selector characters, bidi and C1
controls, counted per line (one finding per line and rule) and shown as ``<U+200B>``; what tag
characters spell is audited as hidden text. Part of the audit of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import bisect
import re
from typing import Any

from . import patterns as P
from .rules import RANK, WINDOW, visible
from .view import shown

# the file's Scan (skillshelf.supply.scan), which calls these functions: typed loosely, as importing it
# here would make a circle
Scan = Any


def check(scan: Scan) -> None:
    if scan.data.translate(None, P.NOT_CONTROL_BYTES):
        for k, m in enumerate(P.CONTROL.finditer(scan.data)):
            if k >= 50:
                break
            c = m.group()[0]
            what = "a terminal escape sequence" if c == 0x1B else f"a control character (U+{c:04X})"
            scan.add("hidden.control", "medium", m.start(), f"{what}: it can hide or rewrite text when printed")
    if scan.data.isascii():
        return
    text = scan.data.decode("utf-8", "replace")
    t = P.INVISIBLE.search(text)
    if t is None:
        return
    newlines = [nl.start() for nl in re.finditer("\n", text)]
    found: dict[tuple[int, str], _Invisible] = {}
    closed: set[int] = set()          # closers of bidi spans already judged with their opener
    pos, n = t.start(), 0
    while n < 5000:
        t = P.INVISIBLE.search(text, pos)
        if t is None:
            break
        n += 1
        pos = _invisible_at(scan, text, t.start(), bisect.bisect_left(newlines, t.start()) + 1, found, closed)
    for (line, rule), inv in found.items():
        _report_invisible(scan, text, line, rule, inv)


def _invisible_at(scan: Scan, text: str, i: int, line: int, found: dict[tuple[int, str], _Invisible],
                  closed: set[int]) -> int:
    """Count the invisible character at ``text[i]`` (line ``line``) and the run it starts into
    what is found on its line; returns where to look next."""
    c = ord(text[i])
    j = i + 1

    def note(rule: str, severity: str, kind: str, n: int, extra: str = "") -> None:
        inv = found.setdefault((line, rule), _Invisible(i))
        if RANK[severity] > RANK[inv.severity]:
            inv.severity = severity
        inv.counts[kind] = inv.counts.get(kind, 0) + n
        inv.longest[kind] = max(inv.longest.get(kind, 0), n)
        inv.first.setdefault(kind, c)
        if extra:
            inv.spelled.append(extra)

    if 0xE0000 <= c <= 0xE007F:
        while j < len(text) and 0xE0000 <= ord(text[j]) <= 0xE007F:
            j += 1
        spelled = "".join(chr(ord(ch) - 0xE0000) for ch in text[i:j] if 0x20 <= ord(ch) - 0xE0000 < 0x7F)
        note("hidden.invisible", "high", "tag", j - i, spelled)
    elif 0xE0100 <= c <= 0xE01EF or 0xFE00 <= c <= 0xFE0E:
        while j < len(text) and (0xE0100 <= ord(text[j]) <= 0xE01EF or 0xFE00 <= ord(text[j]) <= 0xFE0E):
            j += 1
        if j - i >= 4:
            note("hidden.invisible", "high", "variation", j - i)
    elif 0x202A <= c <= 0x202E or 0x2066 <= c <= 0x2069:
        if c in (0x202C, 0x2069):
            if i not in closed:       # a closer with no opener before it on its line
                note("hidden.bidi", "high" if scan.kind != "markdown" else "medium", "bidi", 1)
        else:
            sev = _bidi_severity(text, i, scan.kind, closed)
            if sev:
                note("hidden.bidi", sev, "bidi", 1)
    elif 0x80 <= c <= 0x9F:
        note("hidden.control", "medium", "control", 1)
    elif (c == 0xFEFF and i == 0) or c in (0x200E, 0x200F, 0x061C):
        pass      # a byte-order mark; left/right-to-left and Arabic letter marks lay out mixed-direction text
    else:
        while j < len(text) and ord(text[j]) in _ZERO_WIDTH:
            j += 1
        if j - i >= 8:
            note("hidden.invisible", "high", "zero-width", j - i)
        elif not P.joins_visibly(text, i, j):
            note("hidden.invisible", "medium", "zero-width", j - i)
    return j


def _report_invisible(scan: Scan, text: str, line: int, rule: str, inv: _Invisible) -> None:
    """One finding per line and rule, counting every invisible character of the line."""
    total = sum(inv.counts.values())
    parts = []
    for kind, n in inv.counts.items():
        code = f"U+{inv.first[kind]:04X}"
        if kind == "tag":
            parts.append(f"{n} invisible tag characters spell out: {visible(''.join(inv.spelled), 120)!r}")
        elif kind == "variation":
            parts.append(f"{n} variation selectors: data hidden in invisible characters")
        elif kind == "zero-width":
            parts.append(f"{n} zero-width character{'s' if n > 1 else ''} ({code})"
                         + (f", {inv.longest[kind]} in a row: data can be encoded in them" if inv.longest[kind] >= 8 else
                            " inside the text"))
        elif kind == "bidi":
            parts.append(f"{n} bidirectional control character{'s' if n > 1 else ''} ({code}): the text shown "
                         "is not in the order it is read")
        else:
            parts.append(f"{n} control character{'s' if n > 1 else ''} ({code}): it can hide or rewrite text when "
                         "printed")
    message = "; ".join(parts) if len(parts) == 1 else f"{total} invisible characters on the line: " + "; ".join(parts)
    ls = text.rfind("\n", max(0, inv.at - WINDOW), inv.at) + 1 or max(0, inv.at - WINDOW)
    le = text.find("\n", inv.at, inv.at + WINDOW)
    le = min(len(text), inv.at + WINDOW) if le < 0 else le
    excerpt = text[max(ls, inv.at - 60):le]
    scan.add(rule, inv.severity, -1, message, line=line, shown_as=shown(excerpt))
    spelled = "".join(inv.spelled)
    if spelled.strip() and scan.depth == 0:
        scan.audit_hidden(spelled.encode(), -1, "spelled in invisible tag characters", line=line)


_OVERRIDES = (0x202D, 0x202E)           # LRO, RLO: letters shown in the forced order
_TO_RIGHT = (0x202B, 0x2067)            # RLE, RLI: a right-to-left span
_LTR = re.compile(r"[A-Za-z0-9\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]")


def _bidi_severity(text: str, i: int, kind: str, closed: set[int]) -> str:
    """How a bidi control at ``text[i]`` that opens a span (an embedding, override or isolate)
    hides text, judged by what it surrounds: its span runs to its closer on the line (noted in
    ``closed``; the first of its kind, so a line of many controls costs one search each) or to the line's
    end. Among right-to-left script (Arabic, Hebrew, Persian…) the
    controls lay out mixed-direction words: ordinary ("" is no finding), unless an override forces
    left-to-right letters or digits into another order. An override or a right-to-left span
    over left-to-right text, or any control in a script, reorders what a reader sees (Trojan
    Source): high. A left-to-right or first-strong span over left-to-right text in prose is shown
    as read: medium, or high when it splits a word (it hides the word from a search)."""
    le = text.find("\n", i, i + WINDOW)
    le = min(len(text), i + WINDOW) if le < 0 else le
    c = ord(text[i])
    end = text.find("\u2069" if c >= 0x2066 else "\u202c", i + 1, le)    # the first closer of its kind
    if end < 0:
        end = le
    else:
        closed.add(end)
    inside = text[i + 1:end]
    rtl = P.RTL.search(inside) is not None
    ltr = _LTR.search(inside) is not None
    if not ltr:
        return ""                       # right-to-left words, or nothing to reorder
    if kind == "script" or c in _OVERRIDES:
        return "high"
    if rtl:
        return ""                       # mixed-direction words laid out
    if c in _TO_RIGHT:
        return "high"
    split = (i > 0 and text[i - 1].isalnum() and text[i + 1:i + 2].isalnum()) or (
        end < len(text) and text[end:end + 1] in ("\u202c", "\u2069")
        and text[end - 1:end].isalnum() and text[end + 1:end + 2].isalnum())
    return "high" if split else "medium"


class _Invisible:
    """What one line holds of one kind of finding about invisible characters."""

    def __init__(self, at: int):
        self.at = at                       # the first one, in the decoded text
        self.severity = "low"
        self.counts: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.longest: dict[str, int] = {}
        self.spelled: list[str] = []


_ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD, 0x2061, 0x2062, 0x2063, 0x2064}
