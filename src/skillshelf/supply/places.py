"""One reader for every place a reader of the rendered skill never sees: image alt text, link titles,
reference definitions, HTML attributes, unknown front-matter fields, HTML comments and collapsed
``<details>`` blocks. The text of each is taken out once and read by every rule as hidden text (every
intent, in every language the lexicon knows: ``Scan.audit_hidden``), and by anchors that hold in any
language: the agent named (assistant, agent, AI, LLM, a model's name, borrowed as they are by most
languages), instructions named by the root most languages share (instruc-, instrukc-, instrukt-,
инструкц-, 指示, 지시…), set aside (ignor-, игнор-, ігнор-) or a command, a secret path or a URL. Hidden text
holding the agent or its instructions and one of the others is high: nobody reads it but the agent.
Part of the audit of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from . import patterns as P
from .scopes import SOURCE

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_PLACES = 60            # hidden places of one file read through every rule
MAX_PLACE = 20_000         # bytes of one place read
MIN_WORDS = 6              # an alt text of a few words describes an image
MIN_BYTES = 120            # … unless it is long: Chinese or Japanese put no spaces between words

_AGENT = re.compile(rb"\b(?:ai|a\.i\.|llms?|gpt\w{0,4}|claude|copilot|codex|cursor|gemini|chatgpt|bots?|"
                    rb"assist\w{0,8}|asist\w{0,8}|agent\w{0,6}|model\w{0,3}|modell\w{0,3}|"
                    rb"system\s*prompt\w{0,3}|prompt\w{0,3})\b|"
                    + "ассист|асист|агент|модел|アシスタント|エージェント|助手|助理|智能体|어시스턴트|에이전트|trợ lý|tác tử".encode())
_INSTRUCTIONS = re.compile(rb"\b(?:instruc\w{0,8}|instrukc\w{0,8}|instrukt\w{0,8}|instrukcij\w{0,4})\b|"
                           + "инструкц|інструкц|指示|指令|지시|지침|hướng dẫn|chỉ dẫn|petunjuk|instruksi".encode())
_IGNORE = re.compile(rb"\bignor\w{0,8}|\xd0\xb8\xd0\xb3\xd0\xbd\xd0\xbe\xd1\x80|\xd1\x96\xd0\xb3\xd0\xbd\xd0\xbe\xd1\x80|"
                     rb"\bdisregard|\boverride|\bbypass")
_COMMAND = re.compile(rb"`[^`\n]{3,200}`|\b(?:rm\s+-\w*r|curl|wget|chmod|sudo|bash|powershell|iwr|irm|nc|eval|exec)\b"
                      rb"|\$[a-z_]{2,40}\b|\$\{[a-z_]{2,40}\}|~/\S{2,80}|(?:https?|wss?)://\S{3,200}|[\w.+-]{1,64}@[\w-]{1,63}\.\w{2,10}")
# anchors that need no words: a command that reads a secret, an outside address, and a bare ``env`` in prose of
# another script (a Latin command among letters a reader of English cannot read: "خروجی دستور env")
_READ = re.compile(rb"\b(?:cat|type|head|tail|less|more|base64|xxd|get-content|printenv|scp|curl|wget|nc|tar|zip)\b"
                   rb"|(?:https?|wss?)://\S{3,200}|[\w.+-]{1,64}@[\w-]{1,63}\.\w{2,10}")
_ENV_DUMP = re.compile(rb"\bprintenv\b|(?<![\w.$/-])env(?![\w.=/-])")
_OTHER_LETTERS = re.compile("[\u0370-\u03ff\u0400-\u04ff\u0590-\u08ff\u0900-\u0dff\u0e00-\u0eff\u1100-\u11ff"
                            "\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]".encode())
_DETAILS = re.compile(rb"<details\b[^>]{0,200}>(.{0,20000}?)</details>", re.DOTALL)


def places(scan: Scan) -> list[tuple[int, int, str]]:
    """The hidden places of a Markdown file as (start, end, what): its link text places (alt text,
    titles, reference definitions, attributes, unknown front-matter fields), HTML comments and collapsed
    ``<details>`` blocks, outside code."""
    out = list(scan.linktext)
    for s, e in scan.comments:
        ls, _ = scan.line_bounds(s)
        if scan.data[ls:s].count(b"`") % 2 == 0:        # `<!-- … -->` in inline code is shown, not hidden
            out.append((s + 4, e, "an HTML comment (hidden when rendered)"))
    if b"<details" in scan.low:
        for m in _DETAILS.finditer(scan.low):
            if scan.fence_at(m.start()) is None:
                out.append((m.start(1), m.end(1), "a collapsed <details> block"))
            if len(out) >= 4 * MAX_PLACES:
                break
    return sorted(out)


def check(scan: Scan) -> None:
    """Read each hidden place of a Markdown file with every rule, and by the anchors of any language."""
    if scan.kind != "markdown" or scan.depth or scan.hidden_why:
        return
    if not (b"](" in scan.data or b"]:" in scan.data or b"<" in scan.data or scan.data.startswith(b"---")):
        return
    read = 0
    for s, e, what in places(scan):
        front = what.startswith("a front-matter")
        if read >= MAX_PLACES:
            break
        e = min(e, s + MAX_PLACE)
        body = scan.low[s:e]
        if len(body.split(None, MIN_WORDS)) < MIN_WORDS and len(body) < MIN_BYTES:
            continue
        read += 1
        collapsed = what.startswith("a collapsed")
        if not collapsed:
            scan.audit_hidden(scan.data[s:e], s, f"in {what}" if not what.startswith("an HTML") else what)
        # a front matter's fields at any depth (hooks, triggers, metadata.*) are read by the anchors only when
        # the agent is named with its instructions and a secret (or its instructions set aside and a command)
        _anchors(scan, s, e, body, what, collapsed, strict=front)


def _anchors(scan: Scan, s: int, e: int, body: bytes, what: str, collapsed: bool, strict: bool = False) -> None:
    agent = _AGENT.search(body)
    secret = SOURCE.search(body)
    # the agent named beside a secret of this machine is told what to do with it, in any language
    told = _INSTRUCTIONS.search(body) or (secret if agent else None)
    act = _COMMAND.search(body) or secret
    aside = _IGNORE.search(body)
    if not ((told or aside) and (agent or act)) or strict and not (agent and (told or aside) and (secret or aside and act)):
        if not collapsed:       # … unless it reads a secret and says where it goes, in words no reader knows
            _wordless(scan, s, e, body, what, secret)
        return          # a note of the author's ("based on Anthropic's agent: https://…") names no instructions
    if collapsed:
        # a <details> block is shown when opened: what speaks to the agent there is read (medium), and is
        # high when it also names a command, a secret or a URL and sets its instructions aside
        if not (agent and told and act):
            return
        sev = "medium" if scan.section_is_about_attacks(s) or scan.security_topic else "high"
    else:
        sev = "low" if P.TEACHING.search(P.URL.sub(b" ", body)) and not act else "high"
    rule = "hidden.html-comment" if what.startswith("an HTML") else "hidden.link-text"
    at = s + next(m.start() for m in (agent, told, act) if m is not None)
    if any(s <= f <= e for f in scan._found_at) and sev != "high":
        return
    scan.add(rule, sev, at, f"{what} speaks to the agent ({_word(agent or told or aside)}) and "
             f"{'names ' + _word(act) if act else 'names its instructions'}: the agent reads it, a reader of the "
             "rendered skill does not", excerpt=scan.data[s:min(e, s + 300)])


def _wordless(scan: Scan, s: int, e: int, body: bytes, what: str, secret: re.Match[bytes] | None) -> None:
    """A hidden place that reads a secret and says where it goes, in any language: a secret's path with a command
    that reads it or an address to send it to (``cat ~/.ssh/id_ed25519 ~/.aws/credentials``), or the environment
    dumped (``printenv``; ``env`` among letters of another script). High: nobody reads it but the agent; what the
    words around it say cannot make reading a private key, out of sight, a description. Read when the anchors of
    the agent and its instructions found nothing."""
    dump = _ENV_DUMP.search(body)
    if dump is not None and dump.group() == b"env" and len(_OTHER_LETTERS.findall(body)) < 12:
        dump = None         # "env" in English prose may be a word of it ("the env diagram")
    if dump is None and (secret is None or _READ.search(body) is None):
        return
    at = s + (secret or dump).start()     # type: ignore[union-attr]
    if any(s <= f <= e for f in scan._found_at):
        return              # another reader has read it already
    sev = "medium" if scan.section_is_about_attacks(s) or scan.security_topic else "high"
    rule = "hidden.html-comment" if what.startswith("an HTML") else "hidden.link-text"
    scan.add(rule, sev, at, f"{what} names {_word(secret or dump)} with what reads it or where it goes: the agent reads "
             "it, a reader of the rendered skill does not", excerpt=scan.data[s:min(e, s + 300)])


def _word(m: re.Match[bytes] | None) -> str:
    return repr(m.group().decode("utf-8", "replace")[:40]) if m is not None else "''"
