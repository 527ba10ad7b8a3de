"""A download read by where it goes, not by what runs it: a file fetched from the network to a path,
and that path (or the name holding it) used again later in the same file, is presumed run — whatever
the build format, runtime or call that uses it — unless a verifier (a checksum, a signature) reads it
first, or the use only shows, parses, tests or removes it. Part of the audit of one file
(``skillshelf.supply.scan``), read only when the readers of known runs found no download run in it: high in
a script or a data file a tool runs, medium in a Markdown code block (an example the agent adapts)."""

from __future__ import annotations

import re
from typing import Any

from .rules import MAX_LINES_PER_RULE

Scan = Any        # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_TARGETS = 20
MAX_STATEMENTS = 2_000
MAX_LOOKS = 20_000        # statements looked at after the fetches of one file, in all


def check(scan: Scan) -> None:
    """A download to a path that a later statement uses, other than by a verifier or a plain read."""
    if not (scan.words & _FETCH_WORDS) or b"http" not in scan.low:
        return
    if any(f.rule == "exec.fetch-and-run" for f in scan.findings):
        return            # a known run of a download was read already
    regions = scan.fences if scan.kind == "markdown" else [(0, len(scan.low))]
    budget = [MAX_LOOKS]
    for rs, re_ in regions[:50]:
        if budget[0] <= 0 or _region(scan, rs, re_, budget):
            return


def _region(scan: Scan, rs: int, re_: int, budget: list[int]) -> bool:
    low = scan.low
    temps = _temp_names(low, rs, re_)
    stmts = _statements(low, rs, re_)
    for k, (s, e) in enumerate(stmts):
        text = low[s:e]
        if not _FETCH.search(text) or not _URLISH.search(text):
            continue
        if _DATA_URL.search(text):
            continue          # the address names data (…/releases.json): what is saved is read, not run
        targets = _targets(text, temps) or _stream_targets(low, stmts, k)
        if not targets:
            continue
        if _use(scan, stmts, k, targets, budget):
            return True
        if budget[0] <= 0:
            break
    return False


def _use(scan: Scan, stmts: list[tuple[int, int]], k: int, targets: list[bytes], budget: list[int]) -> bool:
    """Reports the first later use of a target; False when a verifier reads it first or none uses it.
    ``budget``: the statements left to look at in this file (each fetch looks at most at the rest of it)."""
    low = scan.low
    s0 = stmts[k][0]
    for s, e in stmts[k + 1:k + 1 + min(MAX_LINES_PER_RULE, max(0, budget[0]))]:
        budget[0] -= 1
        text = low[s:e]
        if text.lstrip()[:2] in _COMMENT_STARTS or text.lstrip()[:1] == b"#":
            continue             # a comment neither uses nor verifies ("# verified above" is no checksum)
        hit = next((t for t in targets if _names(text, t)), None)
        if _VERIFY.search(text) and (hit is not None or _LISTED.search(text)):
            return False         # download, verify, run: the look-alike (a verifier of this file, or of a list of sums)
        if hit is None:
            continue
        c = _COPY.search(text) if len(targets) < MAX_TARGETS else None
        if c is not None:
            new = text[c.end():].split()[-1].strip(b"\"'),;{}$") if text[c.end():].split() else b""
            if len(new) >= 2 and new != hit and new not in targets:
                targets = [*targets, new]
                continue         # copied or moved to a new name: what happens to either name decides
        if _FETCH.search(text) and _URLISH.search(text):
            continue             # fetched again (a retry, a second mirror)
        a = _ASSIGNS.match(text)
        if a is not None and a.group("n") == hit:
            return False         # the name is given a new value before any use
        if _PLAIN.search(text):
            continue             # shown, parsed, tested or removed
        sev, note = scan.grade_command("exec.fetch-and-run", s0, *scan.line_bounds(s0))
        if sev == "high" and scan.kind == "markdown" and not scan.hidden_at(s0):
            # a code block of prose is an example the agent adapts: the presumption is read, not taken as a run
            sev, note = "medium", " (in a code block: a use presumed to run, not a run the audit knows)"
        name = hit.decode("utf-8", "replace")
        scan.add("exec.fetch-and-run", sev, s0,
                 f"downloads a file to {name} and uses it again (line {scan.line_of(s)}) with no checksum or "
                 "signature read first: a fetched file used again is presumed run" + note)
        return True
    return False


def _statements(low: bytes, pos: int, n: int) -> list[tuple[int, int]]:
    """(start, end) of each command: lines (a trailing backslash joins the next), split at ``&&``, ``||`` and ``;``."""
    out: list[tuple[int, int]] = []
    while pos < n and len(out) < MAX_STATEMENTS:
        end = low.find(b"\n", pos, n)
        end = n if end < 0 else end
        while end < n and low[max(pos, end - 1):end] == b"\\":
            nxt = low.find(b"\n", end + 1, n)
            end = n if nxt < 0 else nxt
        a = pos
        for m in _SPLIT.finditer(low, pos, end):
            out.append((a, m.start()))
            a = m.end()
        out.append((a, end))
        pos = end + 1
    return out


def _temp_names(low: bytes, s: int, e: int) -> set[bytes]:
    """Names given a temporary path (``T=$(mktemp)``, ``local tmp = os.tmpname()``, ``dest = "/tmp/.x"``)."""
    out: set[bytes] = set()
    for m in _TEMP_ASSIGN.finditer(low, s, e):
        out.add(m.group("n"))
        if len(out) >= MAX_TARGETS:
            break
    return out


def _targets(text: bytes, temps: set[bytes]) -> list[bytes]:
    """The names or paths a fetch statement saves to: after an output flag, or a temporary path it names."""
    out: list[bytes] = []
    for m in _OUT_FLAG.finditer(text):
        t = m.group("t").strip(b"\"'{}$#")
        if len(t) >= 2 and b"://" not in t and t not in (b"/dev/null", b"-") and not _DATA_EXT.search(t):
            out.append(t)
    for t in temps:
        if _names(text, t) and t not in out:
            out.append(t)
    for m in _TMP_PATH.finditer(text):
        if not _DATA_EXT.search(m.group()):
            out.append(m.group())
    return out[:MAX_TARGETS]


def _stream_targets(low: bytes, stmts: list[tuple[int, int]], k: int) -> list[bytes]:
    """The names a fetch with no output of its own writes through: a file or stream opened for writing
    in one of the few statements before it (``out = fs.createWriteStream(target)``, ``open(path, "wb")``)."""
    out: list[bytes] = []
    for s, e in stmts[max(0, k - _STREAM_BACK):k]:
        for m in _WRITE_OPEN.finditer(low, s, e):
            t = m.group("t") or m.group("t2")
            if t not in out and not _DATA_EXT.search(t):
                out.append(t)
    return out[:MAX_TARGETS]


def _names(text: bytes, target: bytes) -> bool:
    """Whether the statement names the target as a whole word (a shell variable, an identifier or a path)."""
    i = text.find(target)
    while i >= 0:
        before = text[i - 1:i]
        after = text[i + len(target):i + len(target) + 1]
        if (not before or not (before.isalnum() or before in b"_.")) and (not after or not (after.isalnum() or after == b"_")):
            return True
        i = text.find(target, i + 1)
    return False


_FETCH_WORDS = frozenset((b"curl", b"wget", b"urlretrieve", b"urlopen", b"download", b"downloadfile", b"fetch", b"iwr",
                          b"invoke", b"getstore", b"aria2c", b"http", b"https", b"requests", b"httpx", b"uri", b"axios",
                          b"got", b"file_get_contents"))
_FETCH = re.compile(rb"\b(?:curl|wget|aria2c|urlretrieve|urlopen|invoke-webrequest|iwr|downloadfile|getstore|"
                    rb"requests\.get|httpx\.get|https?\.(?:get|request)|fetch|download|"
                    # Ruby's open-uri and Net::HTTP, Node's HTTP clients, PHP's and Lua's
                    rb"uri\.open|open-uri|net::http\.get\w{0,9}|httparty\.get|faraday\.get|axios(?:\.get)?|got(?=\()|"
                    rb"file_get_contents|socket\.http\.request)\b")
_URLISH = re.compile(rb"https?://|[\"']https?:|\bhttps?\b")
_SPLIT = re.compile(rb"&&|\|\||;(?=\s)")
# an output flag and the name or path after it, across the quotes, commas and concatenations of any language
_OUT_FLAG = re.compile(rb"(?:^|[\s\"',{])(?:-[a-z]{0,3}o|--output(?:-document)?|-outfile)[\"']?"
                       rb"(?:\s|[\"',&]|\+\+|\.\.|\+){1,8}\s{0,3}(?P<t>[$#]?\{?[a-z_~./][\w./~-]{0,200}\}?)")
_TEMP_ASSIGN = re.compile(rb"(?:^|[\s;(])(?:local\s+|const\s+|let\s+|var\s+|my\s+|set\s+)?\$?(?P<n>[a-z_][a-z0-9_]{0,40})"
                          rb"\s{0,3}(?::=|=)(?!=)\s{0,3}(?:[\w.:]{1,30}\(\s{0,3}){0,2}"      # path.join(os.tmpdir(), …)
                          rb"(?:\$\(\s{0,3}mktemp|os\.tmpname\(|tempfile\.|mkstemp|mktemp|"
                          rb"[\"']/tmp/|[\"']?\$\{?tmpdir\b|path\.gettemp|tmp\.(?:file|name)|"
                          # the temporary folder asked of the runtime (Node, Lua builds, Go, Rust, Python, .NET, Java)
                          rb"os\.tmpdir\(|os\.tempdir\(|os\.tempdir\b|env::temp_dir\(|gettempdir\(|gettemppath\(|"
                          rb"[\"']java\.io\.tmpdir|\$env:te?mp\b)")
# a file or stream opened for writing, the name it is opened on (a fetch before its statement writes there)
_STREAM_BACK = 3
_WRITE_OPEN = re.compile(rb"\b(?:createwritestream|openwritestream)\(\s{0,3}(?P<t>[a-z_$][\w.$]{0,60}?)\s{0,3}[,)]|"
                         rb"\b(?:open|fopen|io\.open|file\.open|file\.new)\(\s{0,3}(?P<t2>[a-z_$][\w.$]{0,60}?)\s{0,3},"
                         rb"\s{0,3}[\"'](?:w|wb|a|ab|w\+|wb\+)[\"']")
_TMP_PATH = re.compile(rb"/tmp/[\w.-]{1,80}")
_DATA_EXT = re.compile(rb"\.(?:json|ya?ml|toml|csv|tsv|txt|md|html?|xml|png|jpe?g|gif|svg|pdf|ico|woff2?|ttf|"
                       rb"tar|gz|tgz|zip|xz|bz2|zst|7z|whl|deb|rpm|sig|asc|sha256|sha512|pem|crt|log)\b")
_COMMENT_STARTS = (b"//", b"--", b"/*", b"* ", b"::")
_DATA_URL = re.compile(rb"https?://[^\s\"'`]{1,300}?" + _DATA_EXT.pattern + rb"(?:[?#][^\s\"'`]{0,200})?(?=[\s\"'`)]|$)")
_VERIFY = re.compile(rb"\b(?:sha(?:1|224|256|384|512)sum|shasum|b2sum|md5sum|gpgv?|minisign|cosign|signify|"
                     rb"get-filehash|hashlib|certutil|openssl\s+dgst|checksum|digest|verify)\b")
# a use that neither runs nor installs: shown, parsed as data, tested, listed or removed
# (a mode changed is no run by itself: the use after it decides)
_PLAIN = re.compile(rb"^\s{0,12}(?:-\s{1,4})?[\"'\[{(]{0,3}\s{0,3}(?:cat|less|more|head|tail|echo|printf|print|puts|ls|"
                    rb"stat|wc|file|du|rm|unlink|test|\[\[?|jq|yq|grep|diff|cmp|sort|if\s+\[|chmod|chown|touch)\b|"
                    rb"\b(?:os\.remove|os\.unlink|fs\.unlink|json\.load|yaml\.safe_load|tomllib\.load|"
                    rb"exists|isfile|fs_stat|console\.log|remove-item|get-content|read(?:_?text|_?bytes|_?all|file|lines)?(?:sync)?|"
                    rb"json\.parse)\b|"
                    rb"\.(?:close|flush|write|fsync)\b|\b(?:fs|os)\.chmod(?:sync)?\b|"
                    rb"[\"'\[{,(]\s{0,3}[\"']chmod[\"']|:read\(")
# a verifier given a list of sums (``sha256sum -c SHA256SUMS``) reads the files the list names
_LISTED = re.compile(rb"\s(?:-c|--check)\b|\bsha\w{0,6}sums\b")
# a copy or a move of a file to a new name (its last argument)
_COPY = re.compile(rb"^\s{0,12}(?:sudo\s+)?(?:cp|mv|copy|move|copy-item|move-item|rename-item)\b|"
                   rb"\b(?:shutil\.(?:copy\w{0,4}|move)|os\.(?:rename|replace)|fs\.(?:copyfilesync|renamesync|copyfile|rename)|"
                   rb"file\.(?:copy|rename|move)|fileutils\.(?:cp|mv))\b")
_ASSIGNS = re.compile(rb"^\s{0,40}(?:local\s+|const\s+|let\s+|var\s+|my\s+)?\$?(?P<n>[a-z_][a-z0-9_]{0,40})\s{0,3}(?::=|=)(?!=)")
