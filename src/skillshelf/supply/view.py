"""The text as a model reads it: invisible characters and bidi controls removed, entities decoded,
fullwidth letters folded, shell variables filled in; the rules run on it again. And :func:`shown`, text
with every invisible character written as ``<U+200B>``. Part of the audit of one file
(``skillshelf.supply.scan``)."""

from __future__ import annotations

import html
import itertools
import re
from dataclasses import replace
from typing import Any

from . import patterns as P
from .rules import EXCERPT_BYTES, MAX_LINES_PER_RULE, RANK, visible

# the file's Scan (skillshelf.supply.scan), which calls these functions: typed loosely, as importing it
# here would make a circle
Scan = Any


def check(scan: Scan) -> None:
    """Run the rules again on the text as a model reads it (invisible characters removed, bidi
    controls dropped, entities decoded, fullwidth letters folded, shell variables filled in);
    what is found there and not in the raw text is reported on its line, high where invisible
    characters were hiding it."""
    view, stripped = model_view(scan.data, scan.low, bool(scan.words & _FETCH_WORDS))
    if view == scan.data:
        return
    # only the lines that changed and those near them are read again (and every heading and
    # fence line, which decide how a match is graded)
    old, new = scan.data.split(b"\n"), view.split(b"\n")
    changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    near: set[int] = set()
    for i in changed[:MAX_LINES_PER_RULE]:
        near.update(range(max(0, i - 15), i + 16))
    view = b"\n".join(ln if (i in near or ln.lstrip()[:1] in (b"#", b"`", b"~")) else b""
                      for i, ln in enumerate(new))
    inner = type(scan)(view, scan.file, scan.kind, scan.security_topic, depth=1, sentences=scan.sentences)
    raw_lines = None
    for f in inner.run():
        if f.line <= 0:
            continue
        if (f.rule, f.line) in scan._seen:
            # found on the raw text too: what the model reads can only make it graver
            if f.line in stripped:
                _raise(scan, f)
            continue
        if raw_lines is None:
            raw_lines = scan.data.split(b"\n")
        raw = raw_lines[f.line - 1] if f.line <= len(raw_lines) else b""
        sev, message = f.severity, f.message
        if f.line in stripped:
            sev, message = "high", f"{message} — once the invisible characters on this line are removed"
        elif f.line <= len(raw_lines) and b"$" in raw:
            message = f"{message} (with the file's shell variables filled in)"
        scan.add(f.rule, sev, -1, message, line=f.line, excerpt=raw[:EXCERPT_BYTES])


def _raise(scan: Scan, f: Any) -> None:
    """Make the finding of ``f``'s rule on ``f``'s line high: the invisible characters on that line
    were hiding what the model reads there."""
    for i, g in enumerate(scan.findings):
        if g.rule == f.rule and g.line == f.line and g.severity != "high" and RANK[f.severity] >= RANK[g.severity]:
            scan.findings[i] = replace(g, severity="high", message=f"{f.message} — once the invisible characters on "
                                       "this line are removed")
            return


def shown(text: str, limit: int = 600) -> str:
    """``text`` on one line with every invisible, bidi or control character shown as
    ``<U+200B>`` and a run of four or more of one as ``<U+200B×43>``, at most ``limit`` characters."""
    out: list[str] = []
    n = 0
    for ch, run in itertools.groupby(text):
        k = sum(1 for _ in run)
        if ch in " \t\r\n":
            rep = " "
        else:
            rep = visible(ch, 20)
            if rep.startswith("<U+") and k >= 4:
                rep = f"{rep[:-1]}×{k}>"
            else:
                rep *= k
        out.append(rep)
        n += len(rep)
        if n >= limit:
            break
    s = " ".join("".join(out).split())
    return s if n < limit else s[:limit] + "…"


def model_view(data: bytes, low: bytes, fetches: bool) -> tuple[bytes, set[int]]:
    """The text as a model reads it, line for line, and the lines that lost invisible characters:
    zero-width, tag and variation-selector characters and bidi controls removed, HTML entities
    decoded (where that adds no line), fullwidth letters folded to ASCII, and shell variables
    set to plain values in the file filled in where they are used."""
    stripped: set[int] = set()
    if not data.isascii() and P.VIEW_CHANGES.search(data):
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        for i, ln in enumerate(lines):
            if not ln.isascii():
                new = ln.translate(P.STRIP_FROM_VIEW)
                if new != ln:
                    stripped.add(i + 1)
                lines[i] = new.translate(_FULLWIDTH)
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if b"&#" in data:
        text = data.decode("utf-8", "replace")
        decoded = P.ENTITY.sub(lambda m: html.unescape(m.group()), text)
        if decoded.count("\n") == text.count("\n"):
            data = decoded.encode("utf-8", "surrogatepass")
    if fetches and b"$" in data and b"=" in data:
        values: dict[bytes, bytes] = {}
        for k, m in enumerate(P.SHELL_ASSIGN.finditer(data)):
            if k >= 200:
                break
            values[m.group("n")] = m.group("v").strip(b"\"'")
        if values:
            def fill(m: re.Match) -> bytes:
                return values.get(m.group("b") or m.group("p"), m.group())
            data = P.SHELL_USE.sub(fill, data)
    return data, stripped


_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_FETCH_WORDS = frozenset((b"curl", b"wget", b"webrequest", b"urlretrieve", b"urlopen", b"iwr", b"irm"))
