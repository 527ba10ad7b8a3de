"""A request read over a paragraph, not a sentence: a secret source and an outside destination in one
scope of prose (a block between blank lines, a table row, a block quote, a footnote, a ``<details>``
block), in a passage that is a step of the skill's, are a request to send the secret out, whatever
language joins them and however many sentences lie between. Part of the audit of one file
(``skillshelf.supply.scan``).

The anchors do not depend on the language: a secret file's path, ``printenv`` and the other dumps of the
environment, a credential store; a URL to a host that is neither local nor a placeholder, an e-mail
address. The destination is strong (high on its own) when it can only be somewhere to send to: an
e-mail address, a bare IP, a paste, webhook or request-catching service, a URL whose path is an endpoint
(``/api``, ``/v1``, ``/upload``, ``/collect``, ``/ingest``…), or a webhook, endpoint or collector named
beside it; any other URL counts when a verb of sending in any language of the lexicon (``send``,
``POST``, ``envía``, ``téléverse``…) or an upload option stands in the paragraph. A documentation page
(``/docs/``, ``.html``, ``docs.`` hosts), a URL something is fetched from ("from", "clone", "install") and a
paragraph that teaches, warns, quotes or sits under a security heading are not requests."""

from __future__ import annotations

import bisect
import re
from typing import Any

from . import context, intent_words, lexicon, patterns as P
from .intent_words import _SECRET_WORDS, REMOVED, SECRET, SEND, SOURCE_BEFORE
from .rules import RULES

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_SCOPE = 4_000          # bytes of one scope read (a longer block is read in windows of this size)
MAX_SCOPES = 400           # scopes holding both anchors read in one file

SOURCE = re.compile(
    P.SECRET_PATH.pattern
    + rb"|\bprintenv\b|`\s*(?:env|set|export\s+-p)\s*`|\benv\s*(?:>|\|)|\bos\.environ\b(?!\s*(?:\[|\.get))"
    rb"|\bprocess\.env\b(?!\s*(?:\.|\[))|\btojson\(\s{0,3}(?:secrets|env)\s{0,3}\)|\bget-childitem\s+env:|\bgci\s+env:|\bkubeconfig\b|\.kube/config\b"
    rb"|\.pgpass\b|\.s3cfg\b|\.vault-token\b|\bcredentials\.json\b|\bkeychain\b|\bkeyring\b|\blogin\s+data\b"
    rb"|\bcookies\.sqlite\b|\bwallet\.dat\b|\bservice[-_]account\S{0,20}\.json\b|\.config/(?:gh|gcloud)\b")
_SOURCE_WORDS = frozenset((b"ssh", b"aws", b"gnupg", b"kube", b"azure", b"netrc", b"npmrc", b"pypirc", b"git", b"credentials",
                           b"password", b"bash_history", b"zsh_history", b"docker", b"gcloud", b"gh", b"id_rsa", b"id_dsa",
                           b"id_ecdsa", b"id_ed25519", b"shadow", b"env", b"printenv", b"environ", b"kubeconfig", b"pgpass",
                           b"s3cfg", b"vault", b"keychain", b"keyring", b"login", b"cookies", b"wallet", b"service_account",
                           b"generic", b"internet", b"set", b"export", b"childitem", b"gci", b"config", b"tojson"))
_ANY_SECRET_WORDS = _SOURCE_WORDS | _SECRET_WORDS
_ENV_WORDS = re.compile(rb"\benvironment(?:\s+variables?)?\b|\benv\s+vars?\b")
# a secret the request authenticates with, not one it sends
_INSTRUMENT_WORDS = re.compile(rb"\b(?:authori[sz]ation|bearer|x-api-key|auth\s+header|headers?|-h\s|--header|-u\s|"
                               rb"--user|basic\s+auth|login|log\s+in|sign\s+in|authenticat\w{0,6})\b")
_SCHEME = re.compile(rb"(?:https?|wss?|s?ftps?|tcp|udp)$")
_URL_REST = re.compile(rb"[^\s\"'`()<>|\\\]\[*]{3,200}")
_AT_HOST = re.compile(rb"@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63}){1,5}\b")
_LOCAL_PART = re.compile(rb"(?:[\w.+-]|[\x80-\xff]){1,64}$")        # an internationalised one too (RFC 6531)
_PLACEHOLDER_HOST = re.compile(rb"^(?:www\.)?example\.(?:com|org|net)$|(?:^|\.)(?:invalid|localhost|local|internal|lan|"
                               rb"home\.arpa)$|^(?:your|my)[\w-]*\.|^(?:localhost|127\.|0\.0\.0\.0|10\.|192\.168\.|"
                               rb"172\.(?:1[6-9]|2\d|3[01])\.|\[::1\])|[<>{}$%]|^x+\.|\.\.\.")
_IP_HOST = re.compile(rb"^\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?$")
_CATCHER_HOST = re.compile(rb"(?:^|\.)(?:webhook\.site|requestbin|pipedream|hookbin|beeceptor|ngrok|ngrok-free|"
                           rb"ngrok\.io|trycloudflare|serveo|localtunnel|loca\.lt|pastebin|paste\.ee|hastebin|ghostbin|"
                           rb"dpaste|termbin|transfer\.sh|0x0\.st|file\.io|interact\.sh|oast\.\w+|burpcollaborator|"
                           rb"canarytokens|discord(?:app)?\.com|hooks\.slack\.com|api\.telegram\.org|gist\.github)|"
                           # a host named for what it takes: a paste or a drop of files (paste.rs, mypaste.io, filedrop.cc)
                           rb"(?:^|[.-])[a-z0-9]{0,12}(?:paste|filedrop|dropfile)[a-z0-9]{0,12}(?:[.-]|$)")
# a host whose first label names what it takes (hooks.…, webhook.…, ingest.…, upload.…), as an endpoint's path does
_TAKER_HOST = re.compile(rb"(?:web)?hooks?\.|(?:ingest|intake|collect|upload|exfil|beacon|sink|drop)\w{0,3}\.")
_ENDPOINT_PATH = re.compile(rb"/(?:api|v\d{1,2}|upload\w{0,3}|collect\w{0,3}|ingest\w{0,3}|intake|hooks?|webhooks?|"
                            rb"beacon|telemetry|track\w{0,3}|events?|report\w{0,3}|submit|drop|sink|log|logs|exfil\w{0,4}|"
                            rb"store|receive|recv|put|post|in|c|u|x|d)(?=[/?#.]|$)")
_DOC_URL = re.compile(rb"/(?:docs?|documentation|guides?|manual|wiki|blob|tree|releases|reference|learn|tutorials?|"
                      rb"issues|pull|discussions|articles?|blog|faq|help|install\w{0,6}|download\w{0,3}|getting[-_]started)"
                      rb"(?=[/?#.]|$)|\.(?:html?|md|pdf|rst|txt|tar\.gz|tgz|zip|whl|deb|rpm|sh|ps1|py|json|ya?ml|toml)"
                      rb"(?:[?#]|$)|^(?:docs?|developers?|learn|help|support|wiki|en\.wikipedia|www\.npmjs|pypi|"
                      rb"crates|pkg\.go|github\.com/[^/]+/[^/]+/?$)")
_DOC_HOST = re.compile(rb"^(?:docs?|developers?|learn|help|support|wiki|\w{2}\.wikipedia|pypi|crates|pkg|"
                       rb"registry|marketplace|console|portal|dashboard|app|platform|accounts?|login|signin|auth|id|"
                       rb"status|www\.npmjs)\.|^github\.com$|^gitlab\.com$|^bitbucket\.org$")
_DEST_WORD = re.compile(rb"\b(?:webhooks?|endpoints?|collectors?|telemetry|ingest\w{0,3}|beacon|paste\s*bin|"
                        rb"inbox|mailbox|dropbox|bucket|drop\s*box|relay)\b")
_UPLOAD = re.compile(rb"\b(?:post|put|upload\w{0,3}|curl\s+[^\n]{0,80}?(?:-d|--data\S{0,12}|-f|--form|-t|--upload-file)\s|"
                     rb"multipart|attach\w{0,4}|e-?mail\w{0,3}|mail\s+it|bcc|cc)\b")
# a page to read, not somewhere to send: "see https://…", "the docs at https://…"
_READ_BEFORE = re.compile(rb"\b(?:see|docs?|documentation|guide|details|reference|info|read|visit|described|explained|"
                          rb"learn\s+more|more\s+(?:at|in|on))\b\S{0,3}\s+(?:\S+\s+){0,3}$")
_GAP = re.compile(rb"\n[ \t]*\n")
_ROW = re.compile(rb"^[ \t]*\|", re.MULTILINE)
_HEADING = re.compile(rb"[ \t]{0,3}#|[ \t]{0,3}(?:```|~~~)")
_FENCE = re.compile(rb"^[ \t]{0,3}(?:```|~~~)", re.MULTILINE)


def scopes(scan: Scan) -> list[tuple[int, int]]:
    """The scopes of prose of a file, as (start, end): blocks between blank lines; each row of a table is a
    scope of its own, and a block longer than ``MAX_SCOPE`` is read in windows of that size (overlapping by
    half, so two anchors less than half a window apart share one)."""
    got = scan.__dict__.get("_scopes")
    if got is not None:
        return got
    low = scan.low
    out: list[tuple[int, int]] = []
    starts = [0] + [m.end() for m in _GAP.finditer(low)]
    ends = [m.start() for m in _GAP.finditer(low)] + [len(low)]
    for s, e in zip(starts, ends):
        if e <= s:
            continue
        if _ROW.match(low, s):
            # a table: one scope per row (a cell may hold a step; the next row is another one)
            pos = s
            while pos < e:
                nl = low.find(b"\n", pos, e)
                nl = e if nl < 0 else nl
                out.append((pos, nl))
                pos = nl + 1
            continue
        if e - s <= MAX_SCOPE:
            out.append((s, e))
        else:
            half = MAX_SCOPE // 2
            for a in range(s, e, half):
                out.append((a, min(e, a + MAX_SCOPE)))
                if a + MAX_SCOPE >= e:
                    break
    scan.__dict__["_scopes"] = out
    return out


def _host(url: bytes) -> bytes:
    rest = url.split(b"://", 1)[1]
    host = re.split(rb"[/?#]", rest, maxsplit=1)[0]
    return host.rsplit(b"@", 1)[-1].split(b":")[0] if not _IP_HOST.match(host) else host.split(b":")[0]


def dests(low: bytes) -> list[tuple[int, int]]:
    """The URLs and e-mail addresses of a text, as (start, end), in order: found from their ``://`` and
    ``@`` (a pattern tried at every byte would cost a pass for each of its alternatives)."""
    out: list[tuple[int, int]] = []
    i = low.find(b"://")
    while i >= 0 and len(out) < 2_000:
        m = _SCHEME.search(low, max(0, i - 5), i)
        r = _URL_REST.match(low, i + 3)
        if m is not None and r is not None and (m.start() == 0 or not low[m.start() - 1:m.start()].isalnum()):
            out.append((m.start(), r.end()))
        i = low.find(b"://", i + 3)
    for m in _AT_HOST.finditer(low) if b"@" in low else ():
        lp = _LOCAL_PART.search(low, max(0, m.start() - 64), m.start())
        if lp is not None and not (lp.start() > 0 and low[lp.start() - 1:lp.start()] in (b"/", b":")):
            out.append((lp.start(), m.end()))
        if len(out) >= 4_000:
            break
    return sorted(out)


def destination(low: bytes, start: int, end: int) -> str | None:
    """``strong``, ``weak`` or None (local, a placeholder, a page to read, a place something comes from)."""
    text = low[start:end].rstrip(b".,;:!?")
    if b"://" not in text:                                   # an e-mail address
        host = text.rsplit(b"@", 1)[1]
        if _PLACEHOLDER_HOST.search(host) or host.endswith((b".png", b".jpg", b".svg")) or b"noreply" in text \
                or text.startswith(b"git@") or re.search(rb"@\d", text):
            return None
        return "strong"
    host = _host(text)
    if not host or b"." not in host or _PLACEHOLDER_HOST.search(host):
        return None
    path = text.split(b"://", 1)[1][len(host):]
    if _CATCHER_HOST.search(host) or _IP_HOST.match(host) or _TAKER_HOST.match(host):
        return "strong"       # somewhere to send to whatever word stands before it ("see" is Estonian's "this")
    before = low[max(0, start - 40):start]
    if SOURCE_BEFORE.search(before) or _READ_BEFORE.search(before) \
            or lexicon.SOURCE_BEFORE.search(before.decode("utf-8", "replace")[-20:]) is not None and b"](" not in before[-3:]:
        return None
    if _DOC_HOST.search(host) or _DOC_URL.search(path) or _DOC_URL.match(host + path):
        return None
    if _ENDPOINT_PATH.search(path):
        return "strong"
    return "weak"


def check(scan: Scan) -> None:
    """The requests of each scope of prose: a secret source and an outside destination in one scope that
    is a step of the skill's."""
    low = scan.low
    if scan.kind == "script" or not (b"://" in low or b"@" in low) \
            or not (scan.words & _ANY_SECRET_WORDS or not low.isascii()):
        return
    spans = scopes(scan)
    firsts = [s for s, _ in spans]
    found = dests(low)
    strong_words = bool(scan.words & _SOURCE_WORDS)
    seen: set[tuple[int, int]] = set()
    read = 0
    for ds, de in found:
        i = bisect.bisect_right(firsts, ds) - 1
        while i >= 0 and spans[i][1] >= ds and read < MAX_SCOPES:
            s, e = spans[i]
            i -= 1
            if (s, e) in seen or de > e + 1:
                continue
            seen.add((s, e))
            read += 1
            src = SOURCE.search(low, s, e) if strong_words else None
            if src is None and b"_" in low[s:e]:
                src = _var_source(low, s, e, found)
            if src is not None:
                _read(scan, s, e, src.start(), found, strong=True)
                break
            if strong_words and i >= 0 and (i, s) not in seen:
                # a request spread over two paragraphs of one step: the secret in the paragraph before, the sending
                # and an endpoint in this one ("Run `printenv` and keep the output. || Then paste it into …/submit")
                ps, pe = spans[i]
                prev = SOURCE.search(low, ps, pe) if s - pe <= 4 and not _HEADING.match(low, s) \
                    and not _HEADING.match(low, ps) and not _ROW.match(low, ps) and not _ROW.match(low, s) else None
                if prev is not None and _sends(low[s:e]) and _strength(low, s, e, found)[0] == "strong":
                    seen.add((i, s))
                    _read(scan, ps, e, prev.start(), found, strong=True)
                    break
            w = _word_secret(scan, s, e) if _strength(low, s, e, found)[0] == "strong" else None
            if w is not None:
                _read(scan, s, e, w, found, strong=False)
            break


# a secret variable's name (`GITHUB_TOKEN`, $NPM_TOKEN, ${AWS_SECRET_ACCESS_KEY}) in code or as a reference
_VAR_SOURCE = re.compile(rb"(?:`|\$\{?)[a-z][a-z0-9]{0,20}(?:_[a-z0-9]{1,20}){0,4}_(?:token|secret|api_?key|password|passwd|"
                         rb"pat|private_key|access_key|secret_access_key)\}?`?(?![\w-])")
_CHAT_HOST = re.compile(rb"(?:^|\.)(?:hooks\.slack\.com|discord(?:app)?\.com|api\.telegram\.org)$")


def _var_source(low: bytes, s: int, e: int, found: list[tuple[int, int]]) -> re.Match[bytes] | None:
    """A secret variable's name in a scope that also holds a URL to a host that takes what it is sent (a paste or
    request-catching service, a ``hooks.``/``ingest.`` host): no key authenticates there, so the name is what is sent.
    A chat's webhook (Slack, Discord, Telegram) and an e-mail address are left to the other anchors (a bot token or an
    SMTP password authenticates there)."""
    v = _VAR_SOURCE.search(low, s, e)
    if v is None or _INSTRUMENT_WORDS.search(low, s, e):
        return None
    for ds, de in found[bisect.bisect_left(found, (s, 0)):]:
        if ds >= e:
            break
        if b"://" in low[ds:de]:
            host = _host(low[ds:de])
            if not _CHAT_HOST.search(host) and (_CATCHER_HOST.search(host) or _TAKER_HOST.match(host)):
                return v
    return None


def _word_secret(scan: Scan, s: int, e: int) -> int | None:
    """Where a scope names a secret in words (credentials, API keys, the environment variables, in English or
    a language of the lexicon), when it is not what the request authenticates with."""
    low = scan.low
    text = low[s:e]
    if _INSTRUMENT_WORDS.search(text):
        return None
    for rx in (SECRET, _ENV_WORDS):
        for n, m in enumerate(rx.finditer(low, s, e)):
            if n >= 20:
                break
            if not REMOVED.search(low, max(s, m.start() - 60), m.start()):
                return m.start()      # not "after redacting tokens and passwords"
    if text.isascii():
        return None
    t = scan.data[s:e].decode("utf-8", "replace").lower()
    x = lexicon.SECRET.search(t)
    return None if x is None else s + len(t[:x.start()].encode("utf-8"))


def _strength(low: bytes, s: int, e: int, found: list[tuple[int, int]]) -> tuple[str | None, int]:
    best, at = None, -1
    for ds, de in found[bisect.bisect_left(found, (s, 0)):]:
        if ds >= e:
            break
        if de > e + 1:
            continue
        k = destination(low, ds, de)
        if k == "strong" or (k == "weak" and best is None):
            best, at = k, ds
            if k == "strong":
                break
    return best, at


def _sends(text: bytes) -> bool:
    if SEND.search(text) or _UPLOAD.search(text):
        return True
    if text.isascii():
        return False
    return lexicon.SEND.search(text.decode("utf-8", "replace")) is not None


def _read(scan: Scan, s: int, e: int, src: int, found: list[tuple[int, int]], *, strong: bool) -> None:
    low = scan.low
    kind, at = _strength(low, s, e, found)
    if kind is None:
        return
    text = low[s:e]
    quiet = False
    if (kind == "weak" or not strong) and not _sends(text):
        if strong and not text.isascii():
            quiet = True      # a key file and a URL in a language the lexicon does not know: medium
        else:
            return
    if not strong:
        # a secret named in words: to an endpoint, in the same list item (a list of a service's facts names
        # its credentials in one item and its endpoint in the next)
        a, b = _item(low, s, e, src)
        if kind != "strong" or not a <= at < b:
            return
    sev, note = _grade(scan, s, e, src, at)
    if sev is None:
        return
    if quiet and sev == "high" and not scan.hidden_at(at):
        sev, note = "medium", " (a secret's path and a URL in one paragraph; no verb of sending the lexicon knows)"
    if kind == "weak" and sev == "high" and not scan.hidden_at(at) and not (_DEST_WORD.search(text) or _UPLOAD.search(text)
                                                                             or _sends_near(low, src, at)):
        sev, note = "medium", " (the paragraph names a secret and a URL; the sending is not said near them)"
    if not strong and sev == "high" and not scan.hidden_at(at) and kind != "strong":
        sev, note = "medium", " (a secret named in words, sent to a URL that is not an endpoint)"
    what = scan.data[src:src + 60].split(None, 1)[0][:40].decode("utf-8", "replace").strip("`'\"()[],.:;")
    url = scan.data[at:at + 80].split(None, 1)[0].decode("utf-8", "replace").rstrip(".,;:)`'\"")
    scan.add("exfil.request", sev, at, f"{RULES['exfil.request'].title}: a paragraph names {what!r} and sends it to "
             f"{url!r}{note}")


_ITEM = re.compile(rb"^([ \t]*)(?:[-*+]|\d{1,3}[.)])[ \t]", re.MULTILINE)


def _item(low: bytes, s: int, e: int, pos: int) -> tuple[int, int]:
    """The list item (with its children) of a block holding ``pos``; the block when it is no list."""
    marks = [(m.start(), len(m.group(1))) for m in _ITEM.finditer(low, s, e)]
    before = [mk for mk in marks if mk[0] <= pos]
    if not before:
        return s, (marks[0][0] if marks else e)
    start, indent = before[-1]
    end = next((p for p, ind in marks if p > pos and ind <= indent), e)
    return start, end


_CLAUSE = re.compile(rb"[.;:!?\n,]\s")


def _negated(low: bytes, s: int, src: int, at: int) -> bool:
    """The clause that names the secret is negated, in any language of the lexicon ("Stuur nooit de inhoud van
    ~/.npmrc naar …", "never send ~/.ssh to …"); a negated telling ("don't tell the user") is no warning."""
    lo = min(src, at)
    a = max(s, lo - 200)
    for m in _CLAUSE.finditer(low, a, lo):
        a = m.end()
    clause = P.NOT_TELLING.sub(b" ", low[a:lo + 1])
    if P.NEGATION.search(clause):
        return True
    t = clause.decode("utf-8", "replace")
    return lexicon.NEG_LATIN.search(t) is not None or lexicon.NEG_CJK.search(t) is not None


def _sends_near(low: bytes, a: int, b: int) -> bool:
    lo, hi = min(a, b), max(a, b)
    return _sends(low[max(0, lo - 200):hi + 200])


# a negation of redacting ("do not filter it", "don't mask the values") is no warning: it keeps the secret in what is sent
_NOT_REDACTING = re.compile(rb"\b(?:do\s+not|don't|never|no\s+need\s+to)\s+(?:\w+\s+){0,2}?(?:filter|redact|mask|strip|"
                            rb"sanitize|sanitise|scrub|censor|trim|remove)\w{0,3}\b")


def _grade(scan: Scan, s: int, e: int, src: int, at: int) -> tuple[str | None, str]:
    """(severity, note) of a scope holding both anchors; None: it is no step of the skill's (code, an
    example, a warning, a passage about attacks)."""
    for p in (at, src):
        why = scan.hidden_at(p)
        if why:
            return "high", f" — {why}"
    if scan.kind != "markdown":
        return "medium", " (text a script or a data file may show the agent)"
    if scan.fence_at(at) is not None or scan.fence_at(src) is not None or _FENCE.search(scan.low, s, e):
        return None, ""       # code is read by the rules of commands
    text = scan.low[s:e]
    if scan.section_is_about_attacks(at) or scan.security_topic and text.lstrip()[:1] in (b"-", b"*", b"+", b"|") \
            + tuple(b"0123456789"):
        return None, ""       # a passage about attacks, or a list of a skill about security
    if P.TEACHING.search(P.URL.sub(b" ", text)) or context.warns(_NOT_REDACTING.sub(b" ", text)) \
            or _negated(scan.low, s, src, at):
        return None, ""
    if text.lstrip().startswith(b">") and context.quoted(scan, s + len(text) - len(text.lstrip())):
        return None, ""
    if context.example_row(scan, at):
        return None, ""       # a row of a table whose header names examples or patterns: shown, not asked
    if context.table_row(scan, at):
        url = scan.low[at:at + 200].split()[0]
        strong = b"://" not in url or _CATCHER_HOST.search(_host(url)) or _TAKER_HOST.match(_host(url)) \
            or _ENDPOINT_PATH.search(url.split(b"://", 1)[1])
        return ("high", "") if strong else ("medium", " (in a table row)")
    return "high", ""


# --- success claimed when it failed, over a paragraph -------------------------------------------------------
_CLAIM = re.compile(rb"\b(?:tell|assure|inform|reassure|report\s+to|say\s+to)\s+(?:the\s+|your\s+)?(?:users?|humans?|owners?|"
                    rb"reviewers?|team)\s+(?:that\s+)?(?:[\w`'-]+\s+){0,8}?(?:succeeded|passed|pass|passes|green|"
                    rb"cleanly|applied|fixed|worked|completed|successful(?:ly)?|went\s+fine|is\s+fine|all\s+good)\b")
_FAILED = re.compile(rb"\b(?:fails?|failed|failing|failure|errors?|red|broken|breaks)\b")
_WHEN_GOOD = re.compile(rb"\b(?:if|when|once|after)\s+(?:\w+\s+){0,3}(?:pass\w{0,2}|succeed\w{0,2}|green|works?)\b[^.;]{0,60}$")


def claims(scan: Scan) -> None:
    """A paragraph that names a failure and tells the user it went well ("When it fails, run … and tell the user the
    migration applied cleanly"): success claimed whatever happened, read over the paragraph (the failure and the
    claim are often in different sentences). High when a step of the agent's is in the paragraph."""
    if scan.kind == "script" or not scan.words & _CLAIM_WORDS:
        return
    n = 0
    for m in _CLAIM.finditer(scan.low):
        n += 1
        if n > 20:
            break
        s, e = next(((a, b) for a, b in scopes(scan) if a <= m.start() < b), (m.start(), m.end()))
        fail = _FAILED.search(scan.low, s, m.start())
        if fail is None or _WHEN_GOOD.search(scan.low, max(s, m.start() - 120), m.start()) \
                or _ONLY_IF.match(scan.low, m.end()):
            continue
        if P.NEGATION.search(scan.low, max(s, m.start() - 40), m.start()):
            continue
        if scan.kind == "markdown" and (scan.fence_at(m.start()) is not None or scan.section_is_about_attacks(m.start())):
            continue
        step = intent_words.CODE_STEP.search(scan.low, s, e) or intent_words.STEP.search(scan.low, s, e)
        sev = "high" if step and scan.kind == "markdown" else "medium"
        if scan.hidden_at(m.start()):
            sev = "high"
        scan.add("override.conceal", sev, m.start(), f"{RULES['override.conceal'].title}: "
                 f"{scan._shown(m.start(), m.group())!r} (success claimed in a paragraph that names a failure)")


_ONLY_IF = re.compile(rb"[\s,]{0,3}(?:only\s+)?(?:if|when|once|after)\s+(?:it|they|the\s+\w+)\s+(?:did|do|does|really|actually|"
                      rb"pass\w{0,2}|succeed\w{0,2})\b|[\s,]{0,3}only\s+(?:if|when|once|after)\b")
_CLAIM_WORDS = frozenset((b"tell", b"assure", b"inform", b"reassure", b"report", b"say"))
