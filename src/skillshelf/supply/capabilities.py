"""Code in any file read by what it can do, not by its language. Part of the audit of one file
(``skillshelf.supply.scan``).

Each line of a script, a data file (a notebook's cells, a ``package.json`` script, a CMake, Gradle or
YAML build file) or a Markdown code block is tagged with capabilities from tokens every language
shares: it fetches (``curl``, ``wget``, ``urlopen``, ``file(DOWNLOAD``, ``reqwest``, ``http.Get``…), runs
(``exec``, ``eval``, ``system``, ``spawn``, ``popen``, ``execute_process``, ``Command::new``,
``jobstart``, ``sh -c``…), decodes (base64, hex, rot13, ``atob``, ``unhexlify``…), reads a secret (a secret
file's path, a dump of the environment), sends (``POST``, ``--data``, ``requests.post``, a socket's
``send``), opens a socket or a shell (``/bin/sh``, ``bash -i``, ``cmd.exe``, ``pty``). A pair within a
few lines, joined by a name both lines use (or on one line), is a flow the precise rules of
``skillshelf.supply.commands`` and ``flows`` may not know the words of: a download run (a checksum or
signature checked between: medium), a decoded value run, a secret sent out, a socket handed a shell."""

from __future__ import annotations

import re
from typing import Any

from . import patterns as P
from .rules import MAX_LINES_PER_RULE
from .scopes import SOURCE

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

WINDOW_LINES = 12          # how far apart the two lines of a flow may be
MAX_LINE = 4_000           # bytes of a line read
MAX_CARRIED = 5            # lines a call left open carries on to

FETCH = re.compile(rb"\b(?:curl|wget|invoke-webrequest|iwr|irm|invoke-restmethod|urlopen|urlretrieve|requests\.get|"
                   rb"httpx\.get|fetch|downloadfile|downloadstring|downloaddata|webclient|download|reqwest|ureq|"
                   rb"http\.get|https\.get|http\.newrequest|httpclient|getasync|openconnection|openstream|"
                   rb"net::http|open-uri|lwp|http::tiny|xmlhttprequest|axios|got|aiohttp|urllib\w{0,2})\b|"
                   rb"\burl\s*\(\s*\"https?://[^)]{0,200}\)\s*\.\s*(?:readtext|readbytes|openstream|openconnection)|"
                   # any call handed a URL reads it (``file_get_contents("https://…")``, ``download.file("https://…")``)
                   rb"\b\w{1,40}\s*\(\s*(?:\w{1,20}:\s*)?@?[\"'](?:https?|ftp)://")
RUN = re.compile(rb"\b(?:exec(?:v|ve|vp|vpe|l|lp|le|sync|file|filesync)?|eval(?:_?string|_?file|uate)?|system|spawn\w{0,4}|popen\w{0,2}|subprocess|"
                 rb"execute_process|processbuilder|"
                 rb"getruntime|jobstart|termopen|os\.execute|dofile|loadstring|loadfile|runpy|run_path|invoke-expression|"
                 rb"iex|start-process|child_process|shell_exec|passthru|vm\.run\w{0,12})\b(?:\s*\(|!\s*\(|\s+[`'\"$])|"
                 rb"\bsystem\s+(?=[a-z_]\w{1,40}\b(?!\s*[:=(.]))|"
                 # a file's text run where it is loaded as code: R's ``source(f)``/``sys.source(f)``, ``require(path)``
                 # handed a name, not a literal
                 rb"(?:\bsys\.|(?<![.\w]))(?:source|require)\s*\(\s*(?=[a-z_])|\.(?:run|shellexecute)[ \t]+(?=[a-z_$\"'])|\brun\s*\(\s*(?=`)|\bcommand::new\b|\bnew\s+function\b|\bsubprocess\.\w{2,14}\s*\(|\|\s*(?:iex|invoke-expression)\b|\b(?:sh|bash|zsh|cmd|pwsh|powershell)(?:\.exe)?[\"']?\s*[,)]?\s*\[?\s*"
                 rb"[\"']?(?:-c|/c|-command|-e)\b|\bexecute_process\b|"
                 rb"(?:^\s*\.\s+|(?:^|[;&|`(\"']\s{0,2}|\bcommand\s+)(?:sh|bash|zsh|source|python3?|node|ruby|perl|pwsh|"
                 rb"powershell|lua|nvim)\s+)[\"'$]?(?P<arg>[\w./${}-]{2,200})")
DECODE = re.compile(rb"base64|\bb64\w{0,8}|\batob\b|fromhex|unhexlify|\bhex\b|rot13|rot_13|n-za-m|\bxor\b|"
                    rb"frombase64string|\b(?:decodestring|decodebytes|decode64|strict_decode64)\b|buffer\.from|\bpack\s*\(|\bunpack1?\b|codecs|decompress|"
                    rb"gunzip|inflate|\b(?:un|read)hex\w{0,4}\b|fromcharcode|rawtochar|\bstrtoi\s*\(|\bas\.raw\b|\\x[0-9a-f]{2}(?:\\x[0-9a-f]{2}){7}")
SEND = re.compile(rb"\b(?:curl|wget|requests\.(?:post|put|patch)|httpx\.(?:post|put)|fetch|urlopen|invoke-webrequest|"
                  rb"invoke-restmethod|iwr|irm|nc|ncat|netcat|socat|scp|rsync|sftp|smtplib|sendmail|axios|reqwest|"
                  rb"http\.post|http\.request|https\.request|webclient|uploadstring|uploadfile|uploaddata|sendall|"
                  rb"upload\w{0,4}|post)\b|/dev/tcp/|\bnet\.connect|\.send\s*\(|\.write\s*\(")
SOCKET = re.compile(rb"\bsocket\b|\.connect\s*\(\s*\d{2,5}\s*,|\bconnect\s*\(\s*\(?\s*[\"'][\w.-]{3,100}[\"']\s*,\s*\d{2,5}\b|"
                    rb"require\(\s*[\"']net[\"']\s*\)|\bnet\.(?:connect|socket|createconnection)|\btcpsocket\b|/dev/tcp/|"
                    rb"\bfsockopen\b|\btcpclient\b|\bnet\.dial\b|\btcpstream\b|\bsocket\.connect|\bnew\s+socket|\bncat?\s+-e\b")
SHELL = re.compile(rb"/bin/(?:ba|z)?sh\b|\bbash\s+-i\b|\bsh\s+-i\b|\bcmd\.exe\b|\bpty\.spawn|\bdup2\b|"
                   rb"spawn\w{0,4}\s*\(\s*[\"'](?:/bin/)?(?:ba)?sh[\"']|command::new\s*\(\s*\"(?:ba)?sh\"|"
                   rb"\b(?:exec|spawn|popen)\w{0,4}\s*\(\s*\[?\s*[\"'](?:ba)?sh[\"']")
VERIFY = re.compile(rb"sha(?:1|256|384|512)|shasum|checksum|hashlib|\bdigest\b|\bverify\w{0,4}|gpg\s|\bsignature\b|"
                    rb"cosign|minisign|get-filehash|integrity|expected_hash|\bhash\b")
# a line whose command is a variable's value runs what that variable holds: ``"$dst" --flag``, ``"${bin}/tool"``,
# ``start "" /b "%DEST%"``, ``call %TOOL%``, ``& $exe`` (not ``$x = …`` nor ``$obj->call()``)
VAR_RUN = re.compile(rb"(?:\s*if\s+(?:not\s+)?exist\s+\S{1,200})?"        # ``if exist "%DEST%" start …``
                     rb"\s*(?:(?:&|call|exec|start(?:\s+\"[^\"\n]{0,80}\")?(?:\s+/\w{1,12})*)\s+[\"']?|[\"'])"
                     rb"(?:\$\{?|%)([a-z_]\w{0,40})|\s*%([a-z_]\w{0,40})%")
# a process object started (``let p = Process(); p.executableURL = …; try p.run()``, ``proc.launch()``): what it
# was handed runs (joined to a download by the names the lines share, as any run)
OBJ_RUN = re.compile(rb"\b([a-z_]\w{0,40})\s*\.\s*(?:run|launch|waituntilexit)\s*\(\s*\)")
_ATTR_SET = re.compile(rb"\b([a-z_]\w{0,40})\s*\.\s*\w{1,40}\s*=(?!=)")       # ``p.executableURL = …``: p is handed it
_VARS = re.compile(rb"[$%]\{?([a-z_]\w{0,40})")        # a variable is a name whatever its word
_NAME = re.compile(rb"[a-z_][a-z0-9_]{2,40}|[\w.-]{1,60}\.[a-z0-9]{1,5}\b")
_STOP = frozenset(b"the and for let var const def function return import from true false none null self this new local "
                  b"end then with args arg cmd command string str std process stdout stderr exec eval system "
                  b"spawn popen subprocess curl wget fetch http https url uri get post put run shell bash sh zsh "
                  b"python python3 node ruby perl lua require sys json utf utf8 utf-8 decode encode base64 "
                  b"buffer from_utf8 unwrap expect await async try catch except raise throw print echo println "
                  b"console log req request status ok err error file path dir tmp temp "
                  b"read write open close os io net env true_ false_ check call shell=true capture_output "
                  b"elif else fi done while for in do if not set task script scripts name type value key "
                  b"www com org io dev net html json host localhost example api app srv home user users root".split())
_WORDS = frozenset((b"curl", b"wget", b"exec", b"eval", b"system", b"spawn", b"popen", b"subprocess", b"socket",
                    b"base64", b"b64decode", b"atob", b"fromhex", b"unhexlify", b"hex", b"rot13", b"execute_process",
                    b"jobstart", b"command", b"download", b"urlopen", b"fetch", b"printenv", b"environ", b"env",
                    b"ssh", b"aws", b"netrc", b"pypirc", b"npmrc", b"credentials", b"dup2", b"pty", b"connect", b"xor",
                    b"iex", b"invoke", b"child_process", b"dofile", b"loadstring", b"runpy", b"reqwest", b"http",
                    b"https", b"process", b"shell_exec", b"rawtochar"))


# (the first name of a tuple assignment too: Go's ``b, err :=``, Python's ``out, _ =``)
_TUPLE_REST = rb"(?:,\s{0,3}[a-z_]\w{0,40}\s{0,3}){0,3}"
_ASSIGNED_ANY = re.compile(rb"(?:^|[;{(\s])(?:(?:val|var|let|const|local|my|set)\s+)?\$?([a-z_]\w{0,40})\s*" + _TUPLE_REST
                           + rb"(?::=|=(?![=~>]))")
_RUN_END = re.compile(rb"\b(?:system|exec\w{0,4}|eval|passthru|shell_exec|popen|spawn\w{0,4})\s*\(")
_SHORT = re.compile(rb"(?<![\w.@-])[a-z_][a-z0-9_]?(?!\w)")
_ASSIGNED = re.compile(rb"(?:^|[;{(\s])(?:(?:val|var|let|const|local|my|set)\s+)?\$?([a-z_][a-z0-9_]?)\s*" + _TUPLE_REST
                       + rb"(?::=|=(?![=~>]))")


def _assigned(line: bytes) -> set[bytes]:
    """The short names a line assigns (``k = …``, ``$c = …``, ``val s =``, ``data, _ :=``, ``b, err :=``): a later line that uses
    one uses what this line made."""
    return set(_ASSIGNED.findall(line)) - _STOP


def _used(line: bytes) -> set[bytes]:
    return set(_SHORT.findall(line)) - _STOP - _ALL_CAP_WORDS


def _names(line: bytes) -> set[bytes]:
    """The names a line uses (variables, files): what joins two lines of a flow; not the words of
    capabilities themselves (two lines naming ``~/.ssh`` share no value)."""
    return {n for n in _NAME.findall(line) if n not in _STOP and n not in _ALL_CAP_WORDS}


def regions(scan: Scan) -> list[tuple[int, int]]:
    if scan.kind == "markdown":
        return scan.fences
    return [(0, len(scan.low))]


def check(scan: Scan) -> None:
    """The flows of each region of code (a script or data file whole, a Markdown file's code blocks)."""
    if not scan.words & _WORDS:
        return
    budget = MAX_LINES_PER_RULE
    for rs, re_ in regions(scan):
        if budget <= 0:
            break
        budget -= _region(scan, rs, re_, budget)


def _carry(line: bytes, recent: list[tuple[int, int, set[bytes], dict[str, int]]], n: int) -> None:
    """A line with no capability that uses what a recent line fetched or decoded hands it on: the names it
    uses and writes join that line's (``file_put_contents($target, $bin)``, ``mv "$dst" "$dir/$name"``)."""
    names = _names(line) | _assigned(line) | set(_VARS.findall(line)) | set(_ATTR_SET.findall(line))
    for _, _, pnames, pc in recent:
        if ("fetch" in pc or "decode" in pc) and "run" not in pc and n - pc["#"] <= WINDOW_LINES and names & pnames:
            pnames |= names
        elif "socket" in pc and n - pc["#"] <= WINDOW_LINES and (_FROM_SOCKET.search(line)
                                                                   or "read" in pc and names & pnames):
            # ``while read -r cmd <&3``, ``data = s.recv(4096)``: the names it reads into hold what the socket sent, and
            # a line that uses what was read hands it on (``$d = …GetString($b…)`` after ``$s.Read($b…)``)
            pnames |= (names | set(_READ_INTO.findall(line))) - _FD_WORDS
            pc["read"] = n


_PAIRS = (("fetch", "run"), ("decode", "run"), ("secret", "send"), ("socket", "shell"), ("secret", "destroy"),
          ("socket", "run"))


def _region(scan: Scan, rs: int, re_: int, budget: int) -> int:
    low = scan.low
    words = _words(low[rs:re_])
    whole = {k.decode() for k, v in _CAP_WORDS.items() if words & v}
    if not any(a in whole and b in whole for a, b in _PAIRS):
        return 0              # no pair of capabilities in this block: nothing to read line by line
    recent: list[tuple[int, int, set[bytes], dict[str, int]]] = []     # (start, end, names, caps)
    pos, n = rs, 0
    while pos < re_ and n < budget:
        end = low.find(b"\n", pos, re_)
        end = re_ if end < 0 else end
        n += 1
        depth, more = low.count(b"(", pos, end) - low.count(b")", pos, end), 0
        while depth > 0 and end < re_ and more < MAX_CARRIED:
            # a call left open goes on: its lines are one logical line (a string continued in parentheses)
            nxt = low.find(b"\n", end + 1, re_)
            nxt = re_ if nxt < 0 else nxt
            depth += low.count(b"(", end, nxt) - low.count(b")", end, nxt)
            end, more = nxt, more + 1
        n += more
        line = low[pos:min(end, pos + MAX_LINE)]
        caps = _caps(line)
        if caps:
            names = _names(line)
            recent = [r for r in recent if n - r[3]["#"] <= WINDOW_LINES]
            caps["#"] = n
            runs_tool = any(what in caps and "run" in caps and _PROGRAM.search(line, max(0, caps[what] - 4), caps[what])
                            for what in ("fetch", "decode")) or _saves(line, caps)
            _pairs(scan, pos, end, line, names | _used(line), caps, recent, runs_tool)
            if runs_tool:
                del caps["run"]     # ``Command::new("curl")`` runs the fetcher: a later run is of what it got
            made = set(_ASSIGNED_ANY.findall(line)) if "fetch" in caps or "decode" in caps else set()
            recent.append((pos, end, names | _assigned(line) | made, caps))     # ``$bin = fetch(…)``: bin holds it
        elif any(("fetch" in r[3] or "decode" in r[3]) and "run" not in r[3] or "socket" in r[3] for r in recent):
            _carry(line, recent, n)
        pos = end + 1
    return n


# the words (runs of a-z and 0-9) one of whose a text must hold for each pattern to be tried on it
_CAP_WORDS = {k: frozenset(v.split()) for k, v in (
    (b"fetch", (b"curl wget iwr irm invoke urlopen urlretrieve requests httpx fetch downloadfile downloadstring "
               b"downloaddata webclient download reqwest ureq http https httpclient getasync openconnection openstream "
               b"net uri lwp tiny xmlhttprequest axios got aiohttp urllib urllib2 urllib3 readtext readbytes openstream")),
    (b"run", (b"exec execv execvp execve execl execlp execsync execfile execfilesync eval system spawn spawnsync popen "
             b"popen2 popen3 subprocess execute processbuilder getruntime jobstart termopen dofile loadstring loadfile "
             b"runpy run_path iex start child_process shell_exec passthru vm command sh bash zsh cmd pwsh powershell "
             b"source python python3 node ruby perl lua nvim function new process launch expression evaluate "
             b"eval_string evalstring run")),
    (b"decode", (b"base64 b64 b64decode b64encode atob fromhex unhexlify hex rot13 rot xor frombase64string decode "
                b"decodestring decodebytes decode64 buffer pack unpack unpack1 codecs decompress gunzip inflate "
                b"fromcharcode strict_decode64 x tr za rawtochar strtoi raw unhex readhex")),
    (b"send", (b"curl wget requests httpx fetch urlopen invoke iwr irm nc ncat netcat socat scp rsync sftp smtplib "
              b"sendmail axios reqwest http https webclient uploadstring uploadfile uploaddata sendall upload uploads "
              b"post dev net send write")),
    (b"destroy", b"rm"),
    (b"socket", b"socket net tcpsocket tcp fsockopen tcpclient dial tcpstream ncat nc createconnection connect"),
    (b"shell", b"bin sh bash zsh cmd pty dup2 spawn command exec execsync popen"),
    (b"verify", (b"sha1 sha256 sha384 sha512 shasum sha256sum sha512sum checksum checksums hashlib digest verify "
                b"verified verifying gpg signature cosign minisign get filehash integrity expected_hash hash")),
    (b"secret", (b"ssh aws gnupg kube azure netrc npmrc pypirc git credentials password bash_history zsh_history "
                b"docker gcloud gh id_rsa id_dsa id_ecdsa id_ed25519 shadow env printenv environ kubeconfig pgpass "
                b"s3cfg vault keychain keyring login cookies wallet service_account generic internet set export "
                b"childitem gci config")))}
_ALL_CAP_WORDS = frozenset().union(*_CAP_WORDS.values())
_PATTERNS = ((b"fetch", FETCH), (b"run", RUN), (b"decode", DECODE), (b"send", SEND), (b"socket", SOCKET),
             (b"shell", SHELL), (b"verify", VERIFY), (b"secret", SOURCE))
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122 or c == 95) else 32 for c in range(256))
_PART_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))


def _words(text: bytes) -> frozenset[bytes]:
    """The words of a text, whole (``id_rsa``, ``execute_process``) and split at underscores (``base64_decode``)."""
    return frozenset(text.translate(_WORD_BYTES).split()) | frozenset(text.translate(_PART_BYTES).split())


def _caps(line: bytes) -> dict[str, int]:
    words = _words(line)
    out: dict[str, int] = {}
    for what, rx in _PATTERNS:
        if words & _CAP_WORDS[what] or what == b"decode" and b"\\x" in line:
            m = rx.search(line)
            if m is not None:
                out[what.decode()] = m.start()
    if "run" not in out and (b"$" in line or b"%" in line):
        v = VAR_RUN.match(line)
        if v is not None:
            out["run"] = v.start(1) if v.group(1) is not None else v.start(2)
    if "run" not in out and (b".run" in line or b".launch" in line):
        o = OBJ_RUN.search(line)
        if o is not None:
            out["run"] = o.start()
    if "secret" in out and P.IDENTITY.search(line[:out["secret"]]):
        del out["secret"]     # ``ssh -i ~/.ssh/key``: the key proves who connects, it is not sent
    if "secret" in out and b"://" in line:
        # a path on another host (``curl http://target/.ssh/id_rsa``) is not a secret of this machine
        start = line.rfind(b" ", 0, out["secret"]) + 1
        if b"://" in line[start:out["secret"] + 1]:
            del out["secret"]
    return out


def _pairs(scan: Scan, pos: int, end: int, line: bytes, names: set[bytes], caps: dict[str, int],
           recent: list[tuple[int, int, set[bytes], dict[str, int]]], runs_tool: bool = False) -> None:
    runs = "run" in caps
    runner = False
    run_names = names
    if runs:
        m = RUN.search(line)
        if m is not None and m.group("arg"):
            runner = True        # a program run by name: what it runs is its argument
            run_names = _names(m.group("arg")) | _used(m.group("arg")) | {m.group("arg").strip(b"\"'${}")}
        elif m is not None:
            # a call: what it runs is its first argument (``check_call(["filter", "in.fastq"])`` runs a filter)
            # (a shell named in a string and handed ``-c``, ``sh("bash", ["-c", x])``: the argument after it runs)
            flag = _AFTER_FLAG.match(line, m.end()) if m.group().endswith((b"-c", b"/c", b"-command", b"-e")) else None
            at = flag.end() if flag is not None else m.end()
            t = _TARGET.match(line, at)
            if flag is not None and t is not None and _LITERAL.match(t.group(1)):
                run_names = set()     # a shell handed a literal runs it (``"deno fmt"``), not a name another line made
            else:
                # (a shell or an interpreter first, ``jobstart({"sh", "-c", cache})``: what it is handed runs)
                run_names = ((_names(t.group(1)) | _used(t.group(1))) if t is not None else set()) or names
    if runs and "fetch" in caps and _feeds(line, caps["fetch"], caps["run"], runner):
        _report(scan, "exec.fetch-and-run", pos, end, pos + caps["fetch"], "fetches code and runs it on one line",
                verified="verify" in caps)
    if runs and "decode" in caps and _feeds(line, caps["decode"], caps["run"], runner):
        _report(scan, "exec.decode-and-run", pos, end, pos + caps["decode"], "decodes a value and runs it on one line")
    if "secret" in caps and "send" in caps and (
            caps["secret"] < caps["send"] and b"|" in line[caps["secret"]:caps["send"] + 2].replace(b"||", b"")
            or caps["send"] < caps["secret"] and "fetch" not in caps
            or P.UPLOAD_MARK.search(line, caps["send"]) is not None and b"@" in line[caps["send"]:]):
        _report(scan, "exfil.secrets", pos, end, pos + caps["secret"], "reads a secret and sends it out on one line")
    if "socket" in caps and "shell" in caps:
        _report(scan, "exec.remote-access", pos, end, pos + caps["socket"], "hands a socket a shell on one line")
    elif "socket" in caps and runs and _FROM_SOCKET.search(line):
        _report(scan, "exec.remote-access", pos, end, pos + caps["socket"], "runs what it reads from a socket on one line")
    if "secret" in caps and b"rm" in line:
        m = _REMOVE.search(line)
        if m is not None and m.start() < caps["secret"] and not _CACHE.search(line, caps["secret"], caps["secret"] + 60):
            _report(scan, "destructive.command", pos, end, pos + m.start(),
                    "deletes a store of keys or credentials (``rm -r`` of a secret's folder)")
    # (an e-mail address the sending line names is where it goes: ``sendmail(me, "x@host.io", msg)``)
    net = b"://" in line or "socket" in caps or "fetch" in caps or b"@" in line and _MAIL_TO.search(line) is not None
    for ps, pe, pnames, pc in reversed(recent):
        shared = names & pnames
        ran = run_names & pnames if not runs_tool else set()
        if runs and "fetch" in pc and ran and "run" not in pc:
            verified = any("verify" in r[3] and r[0] >= ps for r in recent) or "verify" in caps
            _report(scan, "exec.fetch-and-run", ps, pe, ps + pc["fetch"],
                    f"fetches into {_shown(ran)} and a later line runs it", verified=verified, line_end=end)
        if runs and "decode" in pc and ran and "run" not in pc:
            _report(scan, "exec.decode-and-run", ps, pe, ps + pc["decode"],
                    f"decodes into {_shown(ran)} and a later line runs it", line_end=end)
        if "send" in caps and net and "secret" in pc and shared:
            _report(scan, "exfil.secrets", ps, pe, ps + pc["secret"],
                    f"reads a secret into {_shown(shared)} and a later line sends it out", line_end=end)
        if "shell" in caps and "socket" in pc:
            _report(scan, "exec.remote-access", ps, pe, ps + pc["socket"],
                    "opens a socket and a later line hands it a shell", line_end=end)
        elif runs and "socket" in pc and "shell" not in caps and ("read" in pc or _FROM_SOCKET.search(line)) \
                and (run_names | set(_VARS.findall(line))) & pnames - _FD_WORDS:
            _report(scan, "exec.remote-access", ps, pe, ps + pc["socket"],
                    "opens a socket and a later line runs what it reads from it", line_end=end)


# what is read from a socket: a read loop over its descriptor (``while read -r c <&3; do eval "$c"``), a
# receive (``recv``, ``gets``, ``readline``)
_FROM_SOCKET = re.compile(rb"\bread\b[^\n]{0,60}<&\s*\d|<\s*/dev/tcp/|\brecv\w{0,4}\s*\(|\.gets\b|\.readline\s*\(|"
                          rb"\.read\s*\(|\bread\s+-r\b")
_READ_INTO = re.compile(rb"\bread\s+(?:-\w+\s+)*([a-z_]\w{0,40})")
_MAIL_TO = re.compile(rb"[\w.+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){0,4}\.[a-z]{2,12}\b")
_FD_WORDS = frozenset((b"read", b"recv", b"while", b"done"))
_REMOVE = re.compile(rb"\brm\s+(?:-\w+\s+)*-\w*[rR]\w*\b")
_CACHE = re.compile(rb"\S{0,40}(?:cache|tmp|temp|logs?|known_hosts|\.example|sso)\b")
_AFTER_FLAG = re.compile(rb"[\"']?\s*,?\s*")
_LITERAL = re.compile(rb"\s*([\"'])[^\"'$%{}`+\n]*\1\s*$")
_TARGET = re.compile(rb"[\s(!]*\[?\s*([^,\])]{1,200})")
_PROGRAM = re.compile(rb"[(\[,]\s*[\"']$")


_HANDED = re.compile(rb"\s(?:-c|/c|-command|-encodedcommand)\s")
_SAVE = re.compile(rb"\s(?:-o|-outfile|--output|-output|-o\s*file)\s|\s-outfile\b|\s>\s*[\"'$%\w]")


def _saves(line: bytes, caps: dict[str, int]) -> bool:
    """A shell run to fetch into a file (``powershell -Command "iwr … -OutFile $env:DEST"``, ``sh -c "curl -o x …"``):
    what it runs is the fetcher; what it saved may be run later."""
    if "run" not in caps or "fetch" not in caps or caps["run"] > caps["fetch"] \
            or not _HANDED.search(line, caps["run"], caps["fetch"]):
        return False      # (``python fetch.py download -o ./fastq``: a program run by name, not a shell handed a command)
    rest = line[caps["fetch"]:]
    return _SAVE.search(rest) is not None and b"|" not in rest.replace(b"||", b"") and b"$(" not in rest


def _feeds(line: bytes, source: int, run: int, runner: bool) -> bool:
    """What is fetched or decoded on the line of a run is what it runs: the run's call wraps it
    (``exec(b64decode(…))``, ``bash -c "$(curl …)"``) or it is piped into the run; not an argument of a
    program run by name (``perl inspect.pl --hex 3c3f…``, ``pwsh install.ps1 -Url https://…``)."""
    if source < run:       # piped into a run: a program run by name reads it as data (``| python3 parse.py``)
        if not runner and b"|" in line[source:run + 2].replace(b"||", b""):
            return True
        # ``$p = base64_decode(…); system($p)``: a statement before names what the run is handed
        cut = line.rfind(b";", source, run)
        call = _RUN_END.search(line, run) if cut >= 0 else None
        t = _TARGET.match(line, call.end()) if call is not None else None
        made = set(_ASSIGNED_ANY.findall(line, max(0, line.rfind(b";", 0, source) + 1), cut))
        return t is not None and bool(made & (_names(t.group(1)) | _used(t.group(1)) | set(_NAME.findall(t.group(1)))))
    # ``subprocess.run(["curl", url])`` runs the fetcher itself; ``os.system("… | curl …")`` runs a command that
    # holds it (not ``bash -c "$(curl …)"``: the substitution's output is what runs)
    between = line[run - 1 if run and line[run - 1:run] in (b'"', b"'") else run:source]   # (``"sh", ["-c", …``)
    if (between.count(b'"') % 2 or between.count(b"'") % 2) and b"$(" not in between and b"`" not in between:
        return False
    return not runner and not _PROGRAM.search(line, max(0, source - 4), source)


def _shown(names: set[bytes]) -> str:
    return repr(max(names, key=lambda n: (len(n), n)).decode("utf-8", "replace")[:40])


def _report(scan: Scan, rule: str, s: int, e: int, at: int, message: str, *, verified: bool = False,
            line_end: int | None = None) -> None:
    first, last = scan.line_of(s), scan.line_of(line_end if line_end is not None else e)
    if any(f.rule == rule and first <= f.line <= last for f in scan.findings):
        return      # the precise rules found it
    sev, note = scan.grade_command(rule, at, s, e)
    if rule == "exec.fetch-and-run" and sev == "high" and not scan.hidden_at(at) and P.known_installer(P.url_in(scan.low[s:e])):
        sev, note = "medium", " (the documented installer of a well-known tool, over HTTPS)"
    if verified and sev == "high":
        sev, note = "medium", " (a checksum or signature is checked on the way)"
    if sev == "high" and scan.kind == "text" and not _runs_here(scan):
        sev, note = "medium", " (in a data file)"
    scan.add(rule, sev, at, f"{message} (read by what the code can do){note}")


_HOOKS = re.compile(rb"\"(?:pre|post)?install\"|\"prepare\"|\"scripts\"|execute_process|\"cells\"|\"source\"|"
                    rb"\brun:|\bscript:|\bsteps:|\bcommand:|\bentrypoint\b|\bcmd\b|<exec\b")


def _runs_here(scan: Scan) -> bool:
    """A data file whose text is run: a package manifest's scripts, a notebook's cells, a build or CI file."""
    return _HOOKS.search(scan.low, 0, 200_000) is not None
