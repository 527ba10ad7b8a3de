"""Shell a build tool runs, written in its configuration: the strings under a key of the shape a tool
runs (``command``, ``commands``, ``cmd``, ``prepareCmd``, ``publishCmd``, ``script``, ``scripts``,
``before_script``, ``run``, ``exec``, ``tasks``, ``entrypoint`` …) in JSON, JSONC, YAML or TOML, in any
file, read as the shell lines they are: JSON's escapes undone, an array's strings one line each, a YAML
block's lines as they are. The commands, the flows and the downloads used again are then read on them
as on a script (an Nx ``nx:run-commands`` target, a Rush ``shellCommand``, a Garden ``run`` action, a
cargo-make task, a semantic-release ``publishCmd``). A key's name decides, not the file's: data that
mentions a command under another key (a ``description``, a schema's ``examples``) is not run. Part of
the audit of one data file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import bisect
import re
from typing import Any

from . import fetch_use

Scan = Any        # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_VALUES = 200              # keys of one file read
MAX_VALUE_BYTES = 20_000      # of one key's value
MAX_SHELL_BYTES = 400_000     # of all the shell lines of one file

_KEY = re.compile(rb"(?:^|[\s{,])[\"']?(?P<k>(?:[a-z][\w]{0,30})?(?:cmds?|commands?)|"
                  rb"(?:[a-z][\w-]{0,30}[_-])?(?:scripts?|run|exec|tasks|entrypoint))[\"']?[ \t]{0,3}[:=][ \t]{0,3}",
                  re.MULTILINE)
_STR = rb"\"(?:[^\"\\\n]|\\.){0,20000}\"|'[^'\n]{0,20000}'"
_STRING = re.compile(_STR)
_ARRAY = re.compile(rb"\[(?:\s|,|" + _STR + rb"|#[^\n]{0,2000}|//[^\n]{0,2000})*\]")
_MAPPING = re.compile(rb"\{(?:\s|,|:|" + _STR + rb"|#[^\n]{0,2000}|//[^\n]{0,2000})*\}")
_TRIPLE = re.compile(rb"\"\"\"(?P<b>.{0,20000}?)\"\"\"|'''(?P<c>.{0,20000}?)'''", re.DOTALL)
_BLOCK = re.compile(rb"[|>][+-]?[ \t]*(?:#[^\n]{0,200})?\n")
_ESC = re.compile(rb"\\(u[0-9a-fA-F]{4}|.)")
_LINE = re.compile(r"\(line (\d{1,7})\)")
_ESCAPES = {b"n": b"\n", b"t": b"\t", b"r": b"", b"\"": b"\"", b"\\": b"\\", b"/": b"/"}
# a mapping's keys that describe a value rather than run it (a JSON schema's)
_DESCRIBING = frozenset((b"description", b"markdowndescription", b"title", b"type", b"default", b"examples", b"example",
                         b"pattern", b"$comment", b"deprecationmessage", b"errormessage"))


def check(scan: Scan) -> None:
    """Read the strings under each key a tool runs as shell lines, and report what a script's readers find there."""
    if scan.kind != "text" or scan.depth > 0 or scan.hidden_why:
        return
    low = scan.low
    chunks: list[tuple[int, int, bool]] = []      # (line in the shell text, offset in the file, spans lines)
    parts: list[bytes] = []
    line, size = 1, 0
    for k, m in enumerate(_KEY.finditer(low)):
        if k >= MAX_VALUES or size >= MAX_SHELL_BYTES:
            break
        for pos, text, spans in _values(low, scan.data, m.end(), m.group("k")):
            text = text[:MAX_VALUE_BYTES]
            chunks.append((line, pos, spans))
            parts.append(text)
            line += text.count(b"\n") + 1
            size += len(text) + 1
    if not parts:
        return
    shell = b"\n".join(parts)
    inner = type(scan)(shell, scan.file, "script", scan.security_topic, depth=scan.depth + 1)
    inner.check_commands()
    inner.check_flows()
    fetch_use.check(inner)
    starts = [c[0] for c in chunks]

    def outer_line(n: int) -> int:
        c = chunks[max(0, bisect.bisect_right(starts, n) - 1)]
        return scan.line_of(c[1]) + (n - c[0] if c[2] else 0)

    for f in inner.finish():
        message = _LINE.sub(lambda m: f"(line {outer_line(int(m.group(1)))})", f.message)
        scan.add(f.rule, f.severity, chunks[max(0, bisect.bisect_right(starts, f.line) - 1)][1],
                 f"{message} (in a command a tool runs from this file)", excerpt=f.excerpt, line=outer_line(f.line))


def _values(low: bytes, data: bytes, p: int, key: bytes) -> list[tuple[int, bytes, bool]]:
    """The strings of one key's value as (offset, shell text, whether it spans lines as written). ``low``
    is read for the shape, ``data`` (the same offsets) gives the text."""
    c = low[p:p + 1]
    end = min(len(low), p + MAX_VALUE_BYTES)
    if c == b"[":
        m = _ARRAY.match(low, p, end)
        return [(s.start(), _unquote(data[s.start():s.end()]), False) for s in _STRING.finditer(low, p, m.end())] if m else []
    if c == b"{":
        if not key.endswith((b"scripts", b"tasks", b"script")):
            return []     # an object under a command's key: its own keys say which of its strings run
        m = _MAPPING.match(low, p, end)
        if m is None:
            return []
        out, skip = [], False
        for s in _STRING.finditer(low, p, m.end()):
            after = low[s.end():s.end() + 4].lstrip()
            if after.startswith(b":"):
                skip = _unquote(s.group()) in _DESCRIBING
                continue      # a name, not a command
            if not skip:
                out.append((s.start(), _unquote(data[s.start():s.end()]), False))
        return out
    if c in (b"\"", b"'"):
        t = _TRIPLE.match(low, p, end)
        if t is not None:
            g = "b" if t.group("b") is not None else "c"
            return [(p, data[t.start(g):t.end(g)].lstrip(b"\n"), True)]
        q = _STRING.match(low, p, end)
        return [(p, _unquote(data[q.start():q.end()]), False)] if q else []
    b = _BLOCK.match(low, p, end)
    if b is not None or low[p:p + 1] in (b"\n", b"\r"):
        return _yaml_block(data, p if b is None else b.end(), end)
    e = low.find(b"\n", p, end)
    text = data[p:end if e < 0 else e].strip()
    if not text or text[:1] in (b"{", b"&", b"*", b"#") or text.lower() in (b"true", b"false", b"null"):
        return []
    return [(p, text, False)]


def _yaml_block(low: bytes, p: int, end: int) -> list[tuple[int, bytes, bool]]:
    """A YAML block scalar or list under a key: the lines more indented than the key's, or its ``- `` items."""
    key_start = low.rfind(b"\n", 0, p - 1) + 1
    key_indent = len(low[key_start:p]) - len(low[key_start:p].lstrip(b" "))
    q = low.find(b"\n", key_start, end) + 1 if low[p - 1:p] != b"\n" else p
    if q <= 0:
        return []
    s, body = q, []
    while q < end:
        e = low.find(b"\n", q, end)
        e = end if e < 0 else e
        row = low[q:e]
        stripped = row.lstrip(b" ")
        indent = len(row) - len(stripped)
        if stripped and (indent < key_indent or (indent == key_indent and not stripped.startswith(b"- "))):
            break
        item = stripped[2:] if stripped.startswith(b"- ") else stripped
        if item[:1] in (b"\"", b"'") and _STRING.fullmatch(item.rstrip()):
            item = _unquote(item.rstrip())
        body.append(item)
        q = e + 1
    return [(s, b"\n".join(body), True)] if any(body) else []


def _unquote(s: bytes) -> bytes:
    """A quoted string's text: JSON's and YAML's double-quoted escapes undone, a single-quoted one as it is."""
    if s[:1] == b"'":
        return s[1:-1].replace(b"''", b"'")
    return _ESC.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1) if len(m.group(1)) == 1 else b"?"), s[1:-1])
