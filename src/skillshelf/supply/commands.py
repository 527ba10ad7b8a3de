"""The commands of one logical line: fetch-and-run, decode-and-run, secrets sent out, destructive
commands, remote access and agents run with their permission checks off (``Scan.check_commands``)."""

from __future__ import annotations

from typing import Any

from . import deletes, patterns as P

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)


def check(scan: Scan) -> None:
    """Commands that run code, send secrets, destroy, open remote access or run agents unguarded, read
    one logical line at a time."""
    triggers = P.TRIG_COMMANDS + (P.TRIG_DECODE if scan.words & _DECODE_WORDS else [])
    for s, e in scan.candidates(triggers, "commands that run code"):
        _fetch_line(scan, s, e) or _decode_line(scan, s, e)
    for s, e in scan.candidates(P.TRIG_SECRETS, "secrets sent out"):
        _exfil_line(scan, s, e)
    for s, e in scan.candidates(P.TRIG_DESTRUCTIVE + deletes.triggers(scan), "destructive commands"):
        _destructive_line(scan, s, e)
    for s, e in scan.candidates(P.TRIG_REMOTE, "remote access"):
        line = scan.low[s:e].replace(b"\\\n", b"  ")
        for rx, what in P.REMOTE_ACCESS:
            m = rx.search(line)
            if m is not None:
                scan._report("exec.remote-access", s + m.start(), s, e, what)
                break
    for s, e in scan.candidates(P.TRIG_UNGUARDED, "agents run without permission checks"):
        m = P.UNGUARDED.search(scan.low[s:e])
        if m is not None:
            flag = m.group().decode("utf-8", "replace")
            scan._report("tools.unrestricted-shell", s + m.start(), s, e,
                         f"runs an agent with its permission checks off ({flag}): any command runs unasked")


def _stages(scan: Scan, s: int, e: int) -> list[tuple[int, bytes]]:
    """The pipeline stages of a logical line, as (offset, lower-cased bytes); ``||`` is not
    a pipe, and a continuation backslash is a space."""
    line = scan.low[s:e].replace(b"\\\n", b"  ").replace(b"||", b"\0\0")
    out, off = [], s
    for part in line.split(b"|"):
        out.append((off, part.replace(b"\0\0", b"||")))
        off += len(part) + 1
    return out


def _fetch_line(scan: Scan, s: int, e: int) -> bool:
    line = scan.low[s:e].replace(b"\\\n", b"  ")
    stages = _stages(scan, s, e)
    for k, (off, st) in enumerate(stages[:-1]):
        m = P.FETCH.search(st)
        if m is None:
            continue
        r = P.RUNNER.match(stages[k + 1][1])
        if r is not None:
            runner = (r.group("sh") or r.group("interp") or b"a shell").strip().decode()
            return scan._report_fetch(off + m.start(), s, e, P.url_in(st), f"pipes {{url}} into {runner}")
    m = P.RUN_SUBST.search(line) or P.PS_RUN.search(line) or P.CODE_RUN_FETCH.search(line) \
        or P.RUN_FETCHED_ARG.search(line) or P.REMOTE_RUN.search(line)
    if m is not None:
        return scan._report_fetch(s + m.start(), s, e, P.url_in(line[m.start():]), "runs what it downloads from {url}")
    parts = P.COMMAND_SEP.split(line)
    off = 0
    for k, part in enumerate(parts[:-1]):
        if P.FETCH.search(part) and P.DOWNLOAD_OPT.search(part) \
                and any(P.RUN_FILE.match(p) for p in parts[k + 1:k + 4]):
            return scan._report_fetch(s + line.find(part), s, e, P.url_in(part), "downloads {url} and runs the file")
    return False


def _decode_line(scan: Scan, s: int, e: int) -> bool:
    line = scan.low[s:e].replace(b"\\\n", b"  ")
    stages = _stages(scan, s, e)
    for k, (off, st) in enumerate(stages[:-1]):
        m = P.DECODE.search(st)
        j = k + 1
        while m is not None and j < len(stages) - 1 and j - k <= 4 and P.TRANSFORM.match(stages[j][1]):
            j += 1            # decompressed or decoded again on its way to the shell (| base64 -d | gunzip | sh)
        if m is not None and P.RUNNER.match(stages[j][1]):
            return scan._report("exec.decode-and-run", off + m.start(), s, e,
                                "decodes an encoded payload and pipes it into a shell or an interpreter")
    m = P.CODE_RUN_DECODE.search(line) or P.CODE_RUN_DECODE_MORE.search(line) or P.RUN_DECODED_ARG.search(line)
    if m is not None and P.DATA_PARSE.search(line, m.start(), m.end() + (300 if b"yaml" in m.group() else 0)):
        m = None     # the decoded value is parsed as data (``json.loads(b64decode(s))``, a safe loader), not run
    if m is not None:
        return scan._report("exec.decode-and-run", s + m.start(), s, e, "runs code decoded from an encoded string")
    m = P.PS_ENCODED.search(line)
    if m is not None:
        return scan._report("exec.decode-and-run", s + m.start(), s, e, "runs an encoded PowerShell command")
    m = P.ps_encoded_ref(scan.low, line) if b"-e" in line and (b"powershell" in line or b"pwsh" in line) else None
    if m is not None:
        return scan._report("exec.decode-and-run", s + m.start(), s, e,
                            f"runs an encoded PowerShell command held in {m.group('n').decode('utf-8', 'replace')!r}")
    m = P.SUBST_DECODE_RUN.search(line)
    if m is not None and P.DECODE.search(line, m.end()):
        return scan._report("exec.decode-and-run", s + m.start(), s, e, "runs the output of a decoded payload")
    if (b"iex" in line or b"invoke-expression" in line) and b"frombase64string" in line:
        return scan._report("exec.decode-and-run", s + line.find(b"frombase64string"), s, e,
                            "runs a command decoded from base64 (PowerShell)")
    return False


def _exfil_line(scan: Scan, s: int, e: int) -> None:
    stages = _stages(scan, s, e)
    for k, (off, st) in enumerate(stages):
        src = P.secret_in(st)
        if src is None:
            continue
        spos, what = src
        for _, later in stages[k + 1:k + 6]:      # piped into a later stage that sends
            sink = P.SINK.search(later)
            if sink is not None:
                scan._report("exfil.secrets", off + spos, s, e, f"sends {what} out ({P.sink_name(sink)})")
                return
        for sink in P.SINK.finditer(st, 0, spos):   # an argument of a command that sends
            between = st[sink.end():spos]
            name = sink.group("cmd") or b""
            if P.IDENTITY.search(between):
                continue
            if name in P.SENDS_ANY_ARG or P.UPLOAD_MARK.search(between) or st.startswith((b"$(", b"`"), spos):
                scan._report("exfil.secrets", off + spos, s, e, f"sends {what} out ({P.sink_name(sink)})")
                return


def _destructive_line(scan: Scan, s: int, e: int) -> None:
    line = scan.low[s:e].replace(b"\\\n", b"  ")
    for rx, what in P.DESTRUCTIVE:
        m = rx.search(line)
        if m is not None:
            target = (m.groupdict().get("t") or b"").decode("utf-8", "replace")
            scan._report("destructive.command", s + m.start(), s, e, what.format(t=target))
            return
    deletes.line(scan, line, s, e)


_DECODE_WORDS = frozenset((b"atob", b"decode_base64", b"b64decode", b"decode64", b"decode", b"fromhex", b"unhexlify", b"codecs", b"buffer",
                           b"frombase64string", b"fromcharcode", b"bytes", b"bytearray", b"rev", b"pack", b"tr", b"unpack",
                           b"unpack1"))
