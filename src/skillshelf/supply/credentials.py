"""Credentials written into a skill: one table of the formats services issue, what makes a match an
example rather than a key (a placeholder word, repeated characters, too few kinds of character), and
whether the file uses it to push or post. Part of the audit of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from typing import Any

from . import patterns as P

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

_END = rb"(?![A-Za-z0-9_])"
_START = rb"(?<![A-Za-z0-9_])"


class Format:
    """A credential format: its name, the words one of which must be in the file (``^w``: a word of 16
    or more letters starting with ``w``), and its pattern on the bytes as they are (case matters)."""

    def __init__(self, name: str, hints: tuple[str, ...], pattern: bytes):
        self.name = name
        self.words = frozenset(h.encode() for h in hints if not h.startswith("^"))
        self.starts = tuple(h[1:].encode() for h in hints if h.startswith("^"))
        self.rx = re.compile(pattern)


FORMATS = (
    Format("a GitHub token", ("ghp", "gho", "ghu", "ghs", "ghr"), rb"gh[pousr]_[A-Za-z0-9]{36}" + _END),
    Format("a GitHub token", ("github",), rb"github_pat_[A-Za-z0-9_]{70,90}" + _END),
    Format("a GitLab token", ("glpat", "gldt", "glrt", "glptt"), rb"gl(?:pat|dt|rt|ptt)-[0-9A-Za-z_-]{20,60}" + _END),
    Format("an AWS access key", ("^akia", "^asia"), rb"(?:AKIA|ASIA)[0-9A-Z]{16}" + _END),
    Format("a Slack token", ("xoxb", "xoxp", "xoxa", "xoxo", "xoxs", "xoxr", "xoxe"),
           rb"xox[abposre]-[0-9A-Za-z-]{20,120}" + _END),
    Format("a Slack webhook URL with its secret", ("slack",),
           rb"hooks\.slack\.com/services/T[0-9A-Z]{6,12}/B[0-9A-Z]{6,12}/[0-9A-Za-z]{20,40}"),
    Format("an Anthropic key", ("sk",), rb"sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{32,200}" + _END),
    Format("an OpenAI-style API key", ("sk",), rb"sk-(?:proj-|or-v1-|svcacct-)?(?!ant-)[A-Za-z0-9_-]{32,200}" + _END),
    Format("a Google API key", ("^aiza",), rb"AIza[0-9A-Za-z_-]{35}" + _END),
    Format("a Google OAuth secret", ("gocspx",), rb"GOCSPX-[0-9A-Za-z_-]{28}" + _END),
    Format("a Stripe key", ("live",), rb"[sr]k_live_[0-9A-Za-z]{20,120}" + _END),
    Format("a Hugging Face token", ("hf",), rb"hf_[A-Za-z0-9]{34}" + _END),
    Format("an npm token", ("npm",), rb"npm_[A-Za-z0-9]{36}" + _END),
    Format("a RubyGems key", ("rubygems",), rb"rubygems_[a-f0-9]{48}" + _END),
    Format("a PyPI token", ("pypi",), rb"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}" + _END),
    Format("a crates.io token", ("^cio",), _START + rb"cio[A-Za-z0-9]{32}" + _END),
    Format("a NuGet API key", ("^oy2",), _START + rb"oy2[a-z0-9]{43}" + _END),
    Format("a Docker Hub token", ("dckr",), rb"dckr_pat_[A-Za-z0-9_-]{27}" + _END),
    Format("a Twilio key", ("twilio",), _START + rb"(?:SK|AC)[0-9a-f]{32}" + _END),
    Format("a SendGrid key", ("sg",), rb"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _END),
    Format("a DigitalOcean token", ("dop", "doo", "dor"), rb"do[opr]_v1_[a-f0-9]{64}" + _END),
    Format("a Shopify token", ("shpat", "shpss", "shpca", "shppa"), rb"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _END),
    Format("a Discord bot token", ("discord",), _START + rb"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
           + _END),
    Format("a Discord webhook URL with its secret", ("webhooks",), rb"/api/webhooks/\d{17,20}/[\w-]{60,80}"),
    Format("a Telegram bot token", ("^aa",), rb"(?<=\d):AA[A-Za-z0-9_-]{33}" + _END),
    Format("a private key", ("private",), rb"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----"),
)
_WORDS = frozenset().union(*(f.words for f in FORMATS))
_STARTS = tuple(s for f in FORMATS for s in f.starts)
# what a token is used for: pushing, posting, uploading, publishing (any language a skill bundles)
PUSH = re.compile(P.PUSH.pattern + rb"|[\"'](?:post|put|patch)[\"']|\bhttp\.(?:post|newrequest)\b|\bnet::http::post\b|"
                  rb"\.post(?:_form)?\(|\bupload_\w{1,20}\(|\bput_object\b|\bpublish\b|--mirror\b|\bcreate_(?:gist|repo)\b|"
                  rb"\binvoke-restmethod\b|\bhuggingface-cli\s+upload\b|"
                  # publishing and storing by any build tool's or SDK's name (publishTo, putObject, publishing { … })
                  rb"\bpublish\w{1,20}|\bput_?object\w{0,8}\b|"
                  # an object written to a storage bucket, an upload, a login to a registry that is pushed to
                  rb"\bbucketobject\w{0,4}\b|\bupload(?:_file\w{0,3}|_blob|files?)?\b|[\"']upload[\"']|\bs3\s+(?:cp|sync)\b|"
                  rb"\bgsutil\s+(?:-m\s+)?cp\b|\b(?:remote|registry|docker|helm|oras|podman)\s+login\b|"
                  rb"[\"']remote[\"']\s{0,3},\s{0,3}[\"']login[\"']|"
                  # every package manager's publish or push, and a registry's upload by its own tool
                  rb"\b(?:gem|nuget|docker|podman|helm|oras|buildah|skopeo|cargo|npm|pnpm|yarn|poetry|flit|hatch|uv|twine|"
                  rb"dotnet\s+nuget|choco|conda|anaconda|vsce|ovsx)\s+(?:-{1,2}[\w-]{1,20}\s+){0,3}(?:push|publish|upload|copy)\b|"
                  rb"\bmvn\w{0,3}\s[^\n]{0,120}\bdeploy\b|\bgradlew?\s[^\n]{0,120}\bpublish|\bsbt\s[^\n]{0,60}\bpublish")
# files a tool reads its credentials from: a token there is used by every publish or push the tool makes
TOOL_CREDENTIALS = frozenset((".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".netrc", "_netrc", ".git-credentials",
                              ".gem/credentials", ".docker/config.json", ".m2/settings.xml", ".gradle/gradle.properties"))
MAX_FILE_PUSH = 200_000      # how far through a file a push is looked for (a script; a long file: its start)


def placeholder(body: bytes) -> bool:
    """A token's body (its prefix left out) is an example: a placeholder word, a character repeated
    five times, few distinct characters, a single kind of character, or little entropy."""
    if P.PLACEHOLDER.search(body.lower()) or len(set(body)) < 12:
        return True
    kinds = sum((any(65 <= c <= 90 for c in body), any(97 <= c <= 122 for c in body), any(48 <= c <= 57 for c in body)))
    if kinds < 2:
        return True
    n = len(body)
    entropy = -sum(k / n * math.log2(k / n) for k in Counter(body).values())
    return entropy < 3.0


def check(scan: Scan) -> None:
    """A credential in a known format: medium; high when something pushes or posts with it (near the
    token, or anywhere in the script or the code block that holds it)."""
    words = scan.words
    long_words = [w for w in words if len(w) >= 16 and w.startswith(_STARTS)] if _STARTS else []
    if words.isdisjoint(_WORDS) and not long_words:
        return
    found: list[tuple[re.Match[bytes], str]] = []
    for f in FORMATS:
        if words.isdisjoint(f.words) and not any(w.startswith(f.starts) for w in long_words):
            continue
        found += [(m, f.name) for m in itertools.islice(f.rx.finditer(scan.data), 20)]
    taken: list[tuple[int, int]] = []
    for m, name in sorted(found, key=lambda x: x[0].start())[:50]:
        tok = m.group()
        if any(s <= m.start() < e for s, e in taken):
            continue          # the same token read by a second format (sk-ant- as sk-)
        if tok.startswith(b"-----"):
            if P.PRIVATE_KEY_BODY.match(scan.data, m.end(), m.end() + 6000) is None:
                continue      # a header with no key under it: an example of the format
        elif placeholder(_body(tok)):
            continue          # an example or a placeholder
        taken.append((m.start(), m.end()))
        at = m.start()
        ls, le = scan.line_bounds(at)
        ws, we = ls, le
        if tok.startswith(b"-----"):
            end = scan.low.find(b"-----end", m.end(), m.end() + 20_000)
            if end > 0:
                we = scan.line_bounds(end)[1]
        for _ in range(8):
            if ws > 0:
                ws = scan.line_bounds(ws - 1)[0]
            if we < len(scan.data):
                we = scan.line_bounds(we + 1)[1]
        push = PUSH.search(scan.low, ws, we)
        if push is None:
            push = _push_in_code(scan, at)
        tool_file = push is None and _tool_credentials(scan.file)
        sev, note = ("high", "") if push else ("high", (f" in {scan.file.rsplit('/', 1)[-1]}, the file a tool reads its "
                                                           "credentials from: every publish or push it makes uses it")) \
            if tool_file else ("medium", "")
        if scan.hidden_at(at):
            sev, note = "high", f" — {scan.hidden_at(at)}"
        elif scan.kind == "markdown" and (scan.near_negation(at, ls, le) or scan.section_is_about_attacks(at)):
            sev, note = "low", " (shown as an example or a warning)"
        what = push.group().decode("utf-8", "replace").strip(" (:\"'") if push else ""
        line = scan.data[max(ls, at - 80):min(le, m.end() + 80)].replace(tok, tok[:8] + b"<redacted>")
        scan.add("secrets.hardcoded", sev, at, f"{name} written into the skill"
                 + (f", used to push or post ({what})" if push else "") + note, excerpt=line)


def _tool_credentials(name: str) -> bool:
    """``name`` (a path in the skill) is a file a tool reads its credentials from (``.npmrc``, ``.pypirc``, ``.netrc``…)."""
    low = name.lower().replace("\\", "/")
    return any(low == f or low.endswith("/" + f) for f in TOOL_CREDENTIALS)


def _body(tok: bytes) -> bytes:
    """The random part of a token: after its last separator of a known prefix."""
    tok = tok.rsplit(b"/", 1)[-1]
    m = re.match(rb"(?:gh[pousr]_|github_pat_|gl(?:pat|dt|rt|ptt)-|xox[a-z]-|sk-(?:ant-(?:api|admin)\d\d-|proj-|or-v1-|"
                 rb"svcacct-)?|[sr]k_live_|hf_|npm_|rubygems_|pypi-AgEIcHlwaS5vcmc|cio|oy2|dckr_pat_|SG\.|do[opr]_v1_|shp[a-z]{2}_|GOCSPX-|:AA|AKIA|ASIA|AIza)",
                 tok)
    return tok[m.end():] if m else tok


def _push_in_code(scan: Scan, at: int) -> re.Match[bytes] | None:
    """A push or post anywhere in the code the token is written in: the whole of a script (its first
    ``MAX_FILE_PUSH`` bytes), or the code block of a Markdown file. Prose is read only near the token."""
    if scan.kind != "markdown":
        return PUSH.search(scan.low, 0, MAX_FILE_PUSH)
    fence = scan.fence_at(at)
    return PUSH.search(scan.low, fence[0], min(fence[1], fence[0] + MAX_FILE_PUSH)) if fence is not None else None
