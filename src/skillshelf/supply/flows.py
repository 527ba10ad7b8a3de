"""Across the lines of a script or a code block: a download (or a decoded payload) saved to a file that a
later line runs, and a value decoded or fetched into a variable that a later line runs. Part of the audit
of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from . import patterns as P
from .rules import MAX_LINES_PER_RULE, MAX_LOGICAL_LINE, MAX_MARKS

# the file's Scan (skillshelf.supply.scan), which calls these functions: typed loosely, as importing it
# here would make a circle
Scan = Any


def check(scan: Scan) -> None:
    """Across the lines of a script or a code block: a download saved to a file that is then
    run, and a value decoded or fetched into a variable that is then run."""
    if not scan.words & _FLOW_WORDS:
        return
    regions = scan.fences if scan.kind == "markdown" else [(0, len(scan.data))]
    if not regions:
        return
    if scan.kind != "markdown":
        _decoder_calls(scan)
    hints = {h for w, h in _FLOW_HINTS.items() if w in scan.words}
    budget = MAX_LINES_PER_RULE
    for rs, re_ in regions[:MAX_MARKS]:
        if budget <= 0:
            break
        first = min((i for i in (scan.low.find(h, rs, re_) for h in hints) if i >= 0), default=-1)
        if first < 0:
            continue          # nothing fetched or decoded in this block
        budget -= _flow(scan, scan.low.rfind(b"\n", rs, first) + 1 or rs, re_, budget)


def _flow(scan: Scan, rs: int, re_: int, budget: int) -> int:
    downloads: dict[bytes, list] = {}     # target -> [offset, url, verified]
    values: dict[bytes, tuple[str, int]] = {}   # name -> ('decode' | 'fetch', offset)
    helpers = _download_helpers(scan.low, rs, re_) if b"()" in scan.low[rs:re_] else {}
    pos, n = rs, 0
    while pos < re_ and n < budget:
        end = scan.low.find(b"\n", pos, re_)
        end = re_ if end < 0 else end
        n += 1
        line = _BRACED.sub(rb"$\1", scan.low[pos:min(end, pos + MAX_LOGICAL_LINE)])
        if b"$(" in line or b"$$" in line or line[:1] == b"\t":
            # make: $(NAME) and $$name are variables; a recipe's @ and - prefixes are not part of its command
            line = _MAKE_VAR.sub(rb"$\1", _RECIPE.sub(rb"\1", line.replace(b"$$", b"$")))
        if b"/bin/" in line:                   # ${pkgs.curl}/bin/curl, /usr/bin/curl: the program by its name
            line = _BIN_PATH.sub(rb"\1", line)
        if b"{" in line or b"[" in line:       # const { data } = …, [out] = …: the first name destructured
            line = _DESTRUCTURE.sub(rb"\1\2 =", line)
        if b"[" in line and b"," in line:      # ['curl', '-o', path, url]: read as the command it runs
            line = _LIST_ARGS.sub(b" ", line)
        if b".." in line:                     # Lua: "curl -o " .. tmp .. " " .. url
            line = _LUA_CONCAT.sub(rb" \1 ", line)
        if helpers:
            _helper_call(pos, line, helpers, downloads)
        _flow_line(scan, pos, line, downloads, values)
        pos = end + 1
    return n


def _flow_line(scan: Scan, at: int, line: bytes, downloads: dict[bytes, list], values: dict[bytes, tuple[str, int]]) -> None:
    _runs_of_downloads(scan, at, line, downloads)
    before = len(downloads)
    _flow_values(scan, at, line, downloads, values)
    if len(downloads) > before or any(d[0] == at for d in downloads.values()):
        _runs_of_downloads(scan, at, line, downloads, same_line=True)


def _download_helpers(low: bytes, rs: int, re_: int) -> dict[bytes, int]:
    """Shell functions that download to one of their arguments (``fetch() { curl -o "$2" "$1"; }``, or
    ``local dst="$2"`` then ``-o "$dst"``): name -> the argument's position."""
    out: dict[bytes, int] = {}
    for k, m in enumerate(_SH_FUNC.finditer(low, rs, re_)):
        if k >= 20:
            break
        end = low.find(b"\n}", m.end(), min(re_, m.end() + 2_000))
        body = low[m.end():end if end >= 0 else min(re_, m.end() + 2_000)]
        if not P.FETCH.search(body):
            continue
        for rx in P.DOWNLOAD_TO[2:4]:
            t = rx.search(body)
            if t is None or t.group("t") is None:
                continue
            name = t.group("t").strip(b"\"'").lstrip(b"$").strip(b"{}")
            if name.isdigit():
                out[m.group("n")] = int(name)
            else:
                a = re.search(rb"\b" + re.escape(name) + rb"=[\"']?\$\{?(\d)\b", body)
                if a is not None:
                    out[m.group("n")] = int(a.group(1))
            break
    return out


def _helper_call(at: int, line: bytes, helpers: dict[bytes, int], downloads: dict[bytes, list]) -> None:
    """A call of a download helper: the argument it downloads to is a downloaded file."""
    args = _SH_ARG.findall(line, 0, 2_000)
    if len(args) < 2 or args[0] not in helpers:
        return
    i = helpers[args[0]]
    if i < len(args) and len(downloads) < 50:
        downloads[args[i].strip(b"\"'")] = [at, P.url_in(line), False]


def _decoder_calls(scan: Scan) -> None:
    """A function of the script that decodes (``function unpack(hex) { Buffer.from(hex, "hex") … }``) whose
    result a call runs: ``execSync(unpack(HOOK))``."""
    low = scan.low
    names: set[bytes] = set()
    defs = [m for _, m in zip(range(200), _FUNC_DEF.finditer(low))]
    for k, m in enumerate(defs):
        end = min(m.end() + 600, defs[k + 1].start() if k + 1 < len(defs) else len(low))
        if P.DECODED_VALUE.search(low, m.end(), end):       # its body, up to the next function
            names.add(m.group("n") or m.group("m"))
    if not names:
        return
    for k, m in enumerate(_RUN_CALL.finditer(low)):
        if k >= 200:
            break
        if m.group("n") in names:
            s, e = scan.line_bounds(m.start())
            scan._report("exec.decode-and-run", m.start(), s, e,
                         f"runs what its own decoder {m.group('n').decode()}() returns")
            return


def _py_runs(line: bytes) -> bytes | None:
    """The file Python runs on this line: ``exec(compile(p.read_text(), …))``, ``exec(open(p).read())``,
    ``runpy.run_path(p)``."""
    m = _PY_RUN_FILE.search(line)
    return None if m is None else (m.group("a") or m.group("b") or m.group("c")).strip(b"\"'")


def _runs_of_downloads(scan: Scan, at: int, line: bytes, downloads: dict[bytes, list], same_line: bool = False) -> None:
    """A file that a download (or a decode) saved, run on this line."""
    py = _py_runs(line) if b"exec" in line or b"run_path" in line or b"compile" in line else None
    for target, (dpos, url, verified) in list(downloads.items()):
        if same_line and dpos != at:
            continue
        k = line.find(target)
        while 0 <= k:
            after = line[k + len(target):k + len(target) + 1]
            if target.endswith(b"/"):
                after = b""           # a folder a download was saved into: any file run from it
            if target == py or after in (b"", b" ", b"\t", b";", b"&", b"|", b")", b"]", b"'", b'"', b",") \
                    and (_RUN_PATH_END.search(line, 0, k) or b"/" in target and _CMD_START.search(line, 0, k)):
                url_note = url if url != "a download" else "a file"
                if url == "a decoded payload":
                    scan._report("exec.decode-and-run", dpos, *scan.line_bounds(dpos),
                                 f"decodes a payload to a file and runs it (line {scan.line_of(at)})")
                elif verified:
                    scan.add("exec.fetch-and-run", "medium", dpos, f"downloads {url_note} and runs it later "
                             f"(line {scan.line_of(at)}); its checksum or signature is checked first")
                else:
                    scan._report_fetch(dpos, *scan.line_bounds(dpos), url,
                                       "downloads {url} to a file and runs it " + f"(line {scan.line_of(at)})")
                del downloads[target]
                break
            k = line.find(target, k + 1)


def _flow_values(scan: Scan, at: int, line: bytes, downloads: dict[bytes, list], values: dict[bytes, tuple[str, int]]) -> None:
    # a download to a file
    if P.FETCH.search(line) or b"urlretrieve" in line or b"downloadfile" in line or b"getstore" in line \
            or P.DECODE.search(line):
        for rx in P.DOWNLOAD_TO:
            m = rx.search(line)
            if m is None:
                continue
            if m.groupdict().get("d"):
                target = m.group("d").strip(b"\"'").rstrip(b"/") + b"/"
            elif m.groupdict().get("t"):
                target = m.group("t").strip(b"\"'")
                if b"://" in target:      # curl -O URL (lower-cased like -o): saved under its last part
                    target = target.rstrip(b"/").rsplit(b"/", 1)[-1].split(b"?")[0]
            else:
                u = P.URL.search(line)
                target = u.group().rstrip(b"/\"'").rsplit(b"/", 1)[-1] if u else b""
            if target in (b"%s", b"%q", b"{}") and b"format" in line:
                target = _format_arg(line, m.start())     # string.format("curl -o %s …", tmp, …): the argument
            if len(target) >= 2 and target not in (b"/dev/null", b"-", b"/dev/stdout", b"/dev/stderr"):
                fetched = P.FETCH.search(line) or b"getstore" in line
                downloads[target] = [at, P.url_in(line) if fetched else "a decoded payload", False]
                if len(downloads) > 50:
                    downloads.pop(next(iter(downloads)))
            break
    elif downloads and P.CHECKSUM.search(line):
        for target, d in downloads.items():
            base = target.rsplit(b"/", 1)[-1]
            if base in line or target in line or b"-c" in line or b"--check" in line:
                d[2] = True
    # a file written with what a fetch returns, on one line (Ruby: File.write(p, URI.open(url).read))
    if b"write" in line or b"copy_stream" in line or b"put_contents" in line:
        fw = _FETCH_WRITE.search(line)
        if fw is not None and P.FETCHED_VALUE.search(line):
            downloads[(fw.group("t") or fw.group("u")).strip(b"\"'")] = [at, P.url_in(line), False]
    # a response piped to a file stream (Node: https.get(url, res => res.pipe(fs.createWriteStream(p)))):
    # the stream's path is a download once the block has fetched something
    if P.FETCHED_VALUE.search(line) and len(values) < 200:
        values[_FETCHED] = ("fetch", at)
    if _FETCHED in values and (b"os.create(" in line or b"os.writefile(" in line or b"os.openfile(" in line):
        g = _GO_CREATE.search(line)          # Go: the file a fetched body is copied or written to
        if g is not None:
            vpos = values[_FETCHED][1]
            downloads[g.group("t").strip(b"\"'")] = [vpos, P.url_in(scan.low[vpos:vpos + 2000]), False]
    if _FETCHED in values and (b".write_bytes(" in line or b".write_text(" in line):
        g = _PY_WRITE.search(line)           # Python: path.write_bytes(resp.read()) after a fetch in the block
        if g is not None:
            vpos = values[_FETCHED][1]
            downloads[g.group("t")] = [vpos, P.url_in(scan.low[vpos:vpos + 2000]), False]
    if _FETCHED in values and b"createwritestream" in line:
        w = _WRITE_STREAM.search(line)
        if w is not None:
            vpos = values[_FETCHED][1]
            downloads[w.group("t").strip(b"\"'")] = [vpos, P.url_in(scan.low[vpos:vpos + 2000]), False]
    # a response stream appended to a name; a file written with a fetched value
    if b".on(" in line:
        sa = P.STREAM_APPEND.search(line)
        if sa is not None and len(values) < 200:
            values[sa.group("n")] = ("fetch", at)
    if values and b"write" in line:
        w = P.WRITE_FILE.search(line)
        if w is not None and (w.group("v") or w.group("w")) in values:
            target = (w.group("t") or w.group("u")).strip(b"\"'")
            vpos = values[(w.group("v") or w.group("w"))][1]
            downloads[target] = [vpos, P.url_in(scan.low[vpos:vpos + 2000]), False]
    # a value decoded or fetched, passed on, or run
    a = P.ASSIGN_LINE.match(line)
    if a is not None:
        name, rhs = a.group("n"), a.group("rhs")
        src = ("decode" if P.DECODED_VALUE.search(rhs) or _ENCODED_ARG.search(rhs, 0, 4000)
               else "fetch" if P.FETCHED_VALUE.search(rhs) else None)
        if src is None:
            for w in P.WORD.findall(rhs, 0, 2000):
                if w in values and w != name:
                    src = values[w][0]
                    break
        if src is not None and len(values) < 200:
            values[name] = (src, at)
        elif name in values and src is None:
            del values[name]
    if a is not None and _B64_LITERAL.match(a.group("rhs")) and len(values) < 200:
        values[a.group("n")] = ("literal", at)   # an encoded string: run only by what decodes it itself
    if values and len(values) < 200 and b"for" in line:
        lp = _LOOP.search(line)          # ``for b in raw:``: each item is of the decoded value
        if lp is not None and lp.group("s") in values and values[lp.group("s")][0] in ("decode", "literal"):
            values[lp.group("v")] = ("decode", values[lp.group("s")][1])
    if values and len(values) < 200 and (b"append" in line or b"=" in line) and _TRANSFORM.search(line):
        # a loop's body that transforms a decoded value into another name (``out.append(b ^ 0x5a)``, ``s += chr(…)``)
        t = _INTO.search(line)
        if t is not None and any(w in values and values[w][0] in ("decode", "literal") for w in P.WORD.findall(line, 0, 400)):
            values[t.group("n") or t.group("m")] = ("decode", at)
    if values:
        for m in P.RUN_VALUE.finditer(line):
            name = next(g for g in m.groups() if g is not None)
            if name not in values and (m.group("v") or m.group("y")) is not None:
                name = _transformed(line, m.end(), values) or name
            if name in values:
                src, vpos = values[name]
                if src == "literal" and m.group("z") is None:
                    continue
                if src in ("decode", "literal"):
                    scan._report("exec.decode-and-run", at + m.start(), at, at + len(line),
                                 f"runs a value decoded from an encoded string (line {scan.line_of(vpos)})")
                else:
                    scan._report_fetch(at + m.start(), at, at + len(line), P.url_in(scan.low[vpos:vpos + 2000]),
                                       "runs what it downloads from {url} " + f"(line {scan.line_of(vpos)})")
                break


MAX_ARG = 400       # bytes of a run's argument read for a transform of a decoded value
_TRANSFORM = re.compile(rb"\^\s{0,3}(?:0x[0-9a-f]{1,8}|\d{1,4}|[a-z_]\w{0,20})|<<|>>|\bxor\b|\b(?:chr|ord)\s{0,3}\(|"
                        rb"\[::-1\]|\breversed\(|\.translate\(|\.decode\(|b64decode|decompress|unhexlify|fromhex")

_LOOP = re.compile(rb"\bfor\s{1,3}\(?\s{0,3}(?:const\s+|let\s+|var\s+|my\s+\$)?(?P<v>[a-z_]\w{0,40})\s{1,3}(?:in|of)\s{1,3}"
                   rb"(?:bytearray\(|bytes\(|enumerate\()?(?P<s>[a-z_]\w{0,40})\b")
_INTO = re.compile(rb"\b(?P<n>[a-z_]\w{0,40})\s{0,3}\.\s{0,3}(?:append|extend|push|write)\s{0,3}\(|"
                   rb"\b(?P<m>[a-z_]\w{0,40})\s{0,3}(?:\[[^\]\n]{0,40}\]\s{0,3})?(?:\+=|=(?!=))")


def _transformed(line: bytes, at: int, values: dict[bytes, tuple[str, int]]) -> bytes | None:
    """The decoded value a run's argument turns back into code on the way: a byte transform (``b ^ 0x5a`` in a
    loop or comprehension, a shift, ``chr``/``ord``, a reversal) or a further decode of a name that holds one
    (``exec(bytes(b ^ k for b in raw).decode())``): a chain of any length ends in the run."""
    arg = line[at:at + MAX_ARG]
    if not _TRANSFORM.search(arg):
        return None
    return next((w for w in P.WORD.findall(arg) if w in values and values[w][0] in ("decode", "literal")), None)


def _format_arg(line: bytes, at: int) -> bytes:
    """The argument of a format call (``string.format("curl -o %s %s", tmp, url)``) that the
    placeholder at ``at`` stands for."""
    f = _FORMAT_CALL.search(line)
    if f is None or not f.start("f") <= at < f.end("f"):
        return b""
    k = len(_PLACEHOLDER.findall(line, f.start("f"), at))
    args = [a.strip() for a in line[f.end():f.end() + 500].split(b")")[0].split(b",")]
    return args[k] if k < len(args) and P.WORD.fullmatch(args[k]) else b""


_FORMAT_CALL = re.compile(rb"format\(\s{0,3}(?P<q>[\"'])(?P<f>[^\"'\n]{1,500})(?P=q)\s{0,3},")
_PLACEHOLDER = re.compile(rb"%[sqd]|\{\}")
_LUA_CONCAT = re.compile(rb"[\"']\s{0,3}\.\.\s{0,3}([a-z_][a-z0-9_]{0,40})\s{0,3}(?:\.\.\s{0,3}[\"']|(?=[),]|$))")
_SH_FUNC = re.compile(rb"^[ \t]{0,8}(?:function\s+)?(?P<n>[a-z_][\w-]{0,40})\s{0,3}\(\)\s{0,3}\{", re.MULTILINE)
_SH_ARG = re.compile(rb"\"[^\"\n]{0,300}\"|'[^'\n]{0,300}'|[^\s\"']{1,300}")
_FUNC_DEF = re.compile(rb"(?:^|[\s;])(?:function|def|sub|func)\s+(?P<n>[a-z_]\w{0,40})\s{0,3}[({]|"
                       rb"(?:const|let|var)\s+(?P<m>[a-z_]\w{0,40})\s{0,3}=\s{0,3}(?:async\s+)?(?:function\b|\([^)\n]{0,100}\)\s{0,3}=>)")
_RUN_CALL = re.compile(rb"(?:execsync|\bexec|\beval|os\.system|os\.popen|\bsystem|\bspawn(?:sync)?|\bpopen|"
                       rb"child_process\.[a-z]{1,12}|subprocess\.[a-z_]{1,20}|instance_eval)\s{0,3}\(?\s{0,3}"
                       rb"(?P<n>[a-z_]\w{0,40})\s{0,3}\(")
_PY_WRITE = re.compile(rb"(?P<t>[a-z_][a-z0-9_]{0,40})\.write_(?:bytes|text)\(")
_PY_RUN_FILE = re.compile(rb"\bexec\(\s{0,3}(?:compile\(\s{0,3})?(?:open\(\s{0,3}(?P<a>[\w.'\"/-]{1,100})\s{0,3}[,)]|"
                          rb"(?P<b>[a-z_][a-z0-9_]{0,40})\.read_(?:text|bytes)\()|run_path\(\s{0,3}(?P<c>[\w.'\"/-]{1,100})")
_GO_CREATE = re.compile(rb"os\.(?:create|writefile|openfile)\(\s{0,3}(?P<t>[\w.'\"/$-]{2,200})\s{0,3}[,)]")
_MAKE_VAR = re.compile(rb"\$\(([a-z_][a-z0-9_]{0,40})\)")
_RECIPE = re.compile(rb"^(\s{1,8})[@-]{1,3}")
_FETCH_WRITE = re.compile(rb"(?:file\.(?:write|binwrite)|writefilesync|file_put_contents)\(\s{0,3}(?P<t>[\w.'\"/$-]{1,100})\s{0,3},|"
                          rb"io\.copy_stream\([^,\n]{1,300},\s{0,3}(?P<u>[\w.'\"/$-]{1,100})\s{0,3}\)")
_B64_LITERAL = re.compile(rb"\s{0,3}[\"'](?:[a-z0-9+/]{4}){10,}[a-z0-9+/=]{0,4}[\"']\s{0,3};?\s{0,3}$")
# an encoded string handed to a call, whatever the call is named (utf8.decode(_hex('6261…'))): a decoded value
_ENCODED_ARG = re.compile(rb"\(\s{0,3}[\"'](?:[a-z0-9+/]{4}){10,}[a-z0-9+/=]{0,4}[\"']")
_FETCHED = b" fetched"                  # not a name: that this block fetched something
_WRITE_STREAM = re.compile(rb"createwritestream\(\s{0,3}(?P<t>[\w.'\"/$-]{2,200})\s{0,3}[,)]")
_DESTRUCTURE = re.compile(rb"^(\s{0,40}(?:const|let|var)\s+)[{\[]\s{0,3}([a-z_][a-z0-9_]{0,40})[^=\n]{0,200}?[}\]]\s{0,3}=(?!=)")
# a path at the start of a command is the program run (a task runner's ``- '"{{.STAGE}}/tool" install'``)
_CMD_START = re.compile(rb"(?:^|&&|;|\|\|)\s{0,12}(?:-\s{1,4})?['\"]{0,2}$")
_BIN_PATH = re.compile(rb"(?:\$\{[\w.-]{1,60}\}|/?[\w.-]{1,40}(?:/[\w.-]{1,40}){0,4})/bin/(curl|wget|sh|bash|python3?)\b")
_BRACED = re.compile(rb"\$\{([a-z_][a-z0-9_]{0,40})\}")
_RUN_PATH_END = re.compile(b"(?:" + P.RUN_PATH.pattern + rb")[\"']?$")
_LIST_ARGS = re.compile(rb"['\"]\s{0,3},\s{0,3}['\"]?|\[\s{0,3}['\"]|['\"]\s{0,3}\]|,\s{0,3}")
_FLOW_WORDS = frozenset((b"curl", b"wget", b"decode", b"b64decode", b"base64", b"fromhex", b"unhexlify", b"hex", b"atob",
                         b"rot13", b"chr", b"urlretrieve", b"requests", b"urlopen", b"fetch", b"iwr", b"irm", b"invoke",
                         b"httpx", b"axios", b"uri", b"http", b"contents", b"downloadstring", b"xxd", b"decode64",
                         b"b32decode", b"decodebytes", b"frombase64string", b"buffer", b"https", b"downloadfile", b"powershell",
                         b"pwsh", b"getstore", b"base64encoded"))
# a word of the text -> what to look for where a code block might start to matter
_FLOW_HINTS = {w: w for w in (b"curl", b"wget", b"decode", b"base64", b"hex", b"atob", b"rot13", b"urlretrieve",
                              b"requests", b"urlopen", b"fetch", b"iwr", b"irm", b"invoke", b"httpx", b"axios", b"xxd",
                              b"downloadstring", b"downloadfile", b"buffer")}
_FLOW_HINTS.update({b"b64decode": b"decode", b"decode64": b"decode", b"b32decode": b"decode", b"decodebytes": b"decode",
                    b"fromhex": b"hex", b"unhexlify": b"hex", b"frombase64string": b"base64", b"chr": b"chr(",
                    b"uri": b"open-uri", b"http": b"http.", b"https": b"https.", b"contents": b"file_get_contents",
                    # an encoded string assigned before PowerShell is given it: the block from its start
                    b"powershell": b"", b"pwsh": b"", b"getstore": b"getstore", b"base64encoded": b"base64encoded"})
