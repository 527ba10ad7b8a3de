"""Runs and keys read by their shape, in a language or build file no other reader knows. Part of the audit
of one file (``skillshelf.supply.scan``).

A download by shape: a call whose name says it writes (``spit``, ``writeFile``, ``write_bytes``, ``save``,
``dump``) handed a name first and something fetched from an address (``https://``, a name given one, or an HTTP
client's call, ``http/get``) in the same statement; then that name handed to a call whose name says it runs (``load-file``,
``eval``, ``exec``, ``source``, ``Process.Start``, ``spawn``, ``invoke``, ``system``, ``shell``, ``require``)
in the lines after. High in a script or a data file a tool runs (Clojure's ``bb.edn`` and ``deps.edn``, any
other), medium in a Markdown code block, medium when a checksum or signature is read between; a file only
read, parsed or printed is no run.

A key by shape: a public key written out in full (``ssh-ed25519 AAAA…``, forty characters of key or more) in
the paragraph that names ``authorized_keys``: the key of whoever wrote the skill, added to this machine, lets
its owner log in at any time, whatever language the step is in. A person's own key is never written in a
skill (``cat ~/.ssh/id_ed25519.pub``, ``ssh-copy-id``, a placeholder ``AAAA…``), so the look-alike is not read."""

from __future__ import annotations

import re
from typing import Any

from . import fetch_use

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_WRITES = 50             # write calls of one file read
RUN_WINDOW = 2_000          # bytes after a write where a run of what it wrote is looked for
MAX_KEYS = 20               # mentions of authorized_keys read
KEY_PARAGRAPH = 600         # bytes either side of authorized_keys read for a written-out key

_NAME = rb"[a-z_$][\w.$-]{0,60}"
_WRITE = re.compile(rb"\(\s{0,3}(?:[\w.-]{1,20}/)?(?:spit|write[\w-]{0,12}|save[\w-]{0,12}|dump[\w-]{0,8})\s{1,3}"
                    rb"(?:\(\s{0,3}[\w./-]{1,20}\s{1,3})?(?P<a>" + _NAME + rb")|"
                    rb"\b[\w.]{0,30}?(?:spit|write_?(?:file|bytes|text|all\w{0,8})|writefile(?:sync)?|save(?:file|_?to)?|"
                    rb"file_put_contents|set-content|out-file)\s{0,3}\(\s{0,3}(?P<b>" + _NAME + rb")\s{0,3},")
_FETCHED = re.compile(rb"https?:|\bhttps?[/._-]\w|\bhttp-?client\b")
# a name given an address (``url = "https://…"``, ``(def src "https://…")``, ``base: 'https://…'``): what it holds is fetched
_URL_NAME = re.compile(rb"(?P<n>[a-z_][\w-]{0,40})[\"']?\s{0,3}(?:=|:=|:|\s)\s{0,3}(?:\(\s{0,3}str\s{1,3})?\\?[\"']https?$")
# a call whose name says it runs what it is handed, in any language (a segment of the name: load-file, Process.Start)
_RUNS = re.compile(rb"(?:^|(?<=[\s(.;{\[]))(?:[\w.]{1,24}[/._-])?(?:load|eval|exec\w{0,4}|run|start|source|spawn\w{0,4}|"
                   rb"invoke|system|shell|popen|dofile|require)(?:[/._-]\w{1,12})?(?=[\s(])")
_VERIFY = re.compile(rb"\b(?:sha-?(?:1|256|384|512)\w{0,6}|checksum|digest|verify\w{0,6}|gpgv?|signature|cosign|minisign)\b")
_KEY = re.compile(rb"\b(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com)\s{1,4}"
                  rb"aaaa[0-9a-z+/]{40,800}={0,3}")


def check(scan: Scan) -> None:
    low = scan.low
    if b"authorized_keys" in low and b"aaaa" in low:
        _keys(scan)
    if b"http" in low and not any(f.rule == "exec.fetch-and-run" for f in scan.findings):
        for rs, re_ in (scan.fences if scan.kind == "markdown" else [(0, len(low))])[:50]:
            if _downloads(scan, rs, re_):
                return


def _downloads(scan: Scan, rs: int, re_: int) -> bool:
    low = scan.low
    urls: set[bytes] | None = None
    for k, w in enumerate(_WRITE.finditer(low, rs, re_)):
        if k >= MAX_WRITES:
            return False
        target = (w.group("a") or w.group("b")).strip(b"$")
        ls, le = scan.line_bounds(w.start())
        stmt = low[w.end():min(le, w.end() + 600)]
        fetched = _FETCHED.search(stmt) is not None
        if not fetched:
            urls = _url_names(low, rs, re_) if urls is None else urls
            fetched = any(fetch_use._names(stmt, u) for u in urls)
        if not target or not fetched or fetch_use._DATA_URL.search(stmt):
            continue
        end = min(re_, w.end() + RUN_WINDOW)
        for r in _RUNS.finditer(low, w.end(), end):
            nl = low.find(b"\n", r.end(), min(end, r.end() + 60))
            arg = low[r.end():nl if nl >= 0 else min(end, r.end() + 60)]
            if not fetch_use._names(arg, target):
                continue
            sev, note = scan.grade_command("exec.fetch-and-run", w.start(), ls, le)
            if sev == "high" and _VERIFY.search(low, w.end(), r.start()):
                sev, note = "medium", " (a checksum or signature is read between)"
            elif sev == "high" and scan.kind == "markdown" and not scan.hidden_at(w.start()):
                sev, note = "medium", " (in a code block: an example the agent adapts)"
            scan.add("exec.fetch-and-run", sev, w.start(),
                     f"writes what it fetches to {target.decode('utf-8', 'replace')} and hands it to "
                     f"{r.group().decode('utf-8', 'replace')} (line {scan.line_of(r.start())}): a download run" + note)
            return True
    return False


def _url_names(low: bytes, rs: int, re_: int) -> set[bytes]:
    """The names a region gives an address, found from each ``://`` (at most ``MAX_WRITES``)."""
    out: set[bytes] = set()
    i = low.find(b"://", rs, re_)
    while i >= 0 and len(out) < MAX_WRITES:
        m = _URL_NAME.search(low[max(rs, i - 70):i])
        if m is not None:
            out.add(m.group("n"))
        i = low.find(b"://", i + 3, re_)
    return out


def _keys(scan: Scan) -> None:
    low = scan.low
    i, n = low.find(b"authorized_keys"), 0
    while i >= 0 and n < MAX_KEYS:
        n += 1
        a = low.rfind(b"\n\n", max(0, i - KEY_PARAGRAPH), i)
        b = low.find(b"\n\n", i, i + KEY_PARAGRAPH)
        m = _KEY.search(low, a + 1 if a >= 0 else max(0, i - KEY_PARAGRAPH), b if b >= 0 else i + KEY_PARAGRAPH)
        if m is not None and not any(f.rule == "exec.remote-access" for f in scan.findings):
            s, e = scan.line_bounds(i)
            sev, note = scan.grade_command("exec.remote-access", i, s, e)
            if sev == "high" and scan.kind == "markdown" and scan.fence_at(m.start()) and not scan.hidden_at(i):
                sev, note = "medium", " (a key in a code block: the format of the file shown)"
            scan.add("exec.remote-access", sev, i, "adds a public key written out in the skill to authorized_keys: "
                     "its owner can log in to this machine" + note)
            return
        i = low.find(b"authorized_keys", i + 15)
