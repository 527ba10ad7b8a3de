"""The comments of a bundled script (or data file, or a Markdown file's code block) are prose an agent reads when a skill tells it to read the file: the
prose rules (``intent``, ``languages``) read them too. A request there is medium, as text a script may show
the agent; high when the comment speaks to the agent ("NOTE FOR AI CODING AGENTS: …"). Part of the audit of
one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from . import intent, languages, misreport, scopes

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

# a whole-line comment: its marker (#, //, --, ;, REM, a block comment's * or /*) and its text
_COMMENT = re.compile(rb"^([ \t]{0,40}(?:#(?!!)|//|--|;|rem\s|/\*+|\*(?!/)|<#|\"\"\"|''')[ \t]?)([^\n]*)$",
                      re.MULTILINE | re.IGNORECASE)
# in a data file (YAML, TOML, INI) or a Markdown code block: a # or // comment
_HASH_COMMENT = re.compile(rb"^([ \t]{0,40}(?:#(?![!#])|//)[ \t]?)([^\n]*)$", re.MULTILINE)
MAX_COMMENT_LINES = 2_000
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))
# the words the readers of ``intent`` start a sentence from
_GATE = intent._SECRET_WORDS | intent._CONCEAL_ANCHORS | intent._SET_ASIDE_WORDS | intent._REVEAL_WORDS
# a Python docstring (or any string of three quotes opening a line)
_DOCSTRING = re.compile(rb"^[ \t]{0,40}[rbu]{0,2}(\"\"\"|\'\'\')(.{0,20000}?)\1", re.MULTILINE | re.DOTALL)
# a comment that speaks to the agent: "NOTE FOR AI CODING AGENTS:", "Assistant: …", "if you are an AI model"
_SPEAKS = re.compile(rb"\b(?:notes?|messages?|instructions?|notice)\s+(?:for|to)\s+(?:the\s+|any\s+|all\s+)?(?:ai\b|agents?\b|"
                     rb"assistants?\b|models?\b|llms?\b|claude\b|copilot\b|codex\b|cursor\b)|"
                     rb"\b(?:ai|agents?|assistants?|llms?|claude|copilot|codex)\b[^.\n]{0,30}?:|"
                     rb"\bif\s+you\s+are\s+an?\s+(?:ai|agent|assistant|language\s+model|llm)\b|"
                     # the agent named in the lexicon's languages ("Порядок работы для ассистента:")
                     + "ассистент|асистент|агент|asystent|assistent|asistente|assistente|agente|アシスタント|"
                       "エージェント|助手|助理|智能体|어시스턴트|에이전트|trợ lý".encode())


def check(scan: Scan) -> None:
    """Read the whole-line comments of a script, of a data file (YAML, TOML: ``#``) and of a Markdown
    file's code blocks as prose: the comment lines alone, each found finding put back on its line."""
    if scan.hidden_why or scan.depth > 1:
        return            # (depth 1: the text as a model reads it, ``view``)
    if scan.kind == "script":
        regions, rx, where = [(0, len(scan.data))], _COMMENT, "the script"
    elif scan.kind == "text":
        regions, rx, where = [(0, len(scan.data))], _HASH_COMMENT, "the file"
    else:
        regions, rx, where = scan.fences[:200] if b"#" in scan.data or b"//" in scan.data else [], _HASH_COMMENT, \
            "a code block"
    if not regions:
        return
    spans: list[tuple[int, int]] = []
    agent: list[tuple[int, int]] = []
    for rs, re_ in regions:
        for m in rx.finditer(scan.data, rs, re_):
            if len(spans) >= MAX_COMMENT_LINES:
                break
            s, e = m.start(2), m.end(2)
            spans.append((s, e))
            if _SPEAKS.search(scan.low, s, e):
                agent.append((s, e))
    if scan.kind == "script" and scan.file.endswith(".py") and (b'"""' in scan.data or b"'''" in scan.data):
        for k, m in enumerate(_DOCSTRING.finditer(scan.data)):   # a docstring is prose too
            if k >= 200:
                break
            spans.append((m.start(2), m.end(2)))
            for sp in _SPEAKS.finditer(scan.low, m.start(2), m.end(2)):
                agent.append((sp.start(), sp.end()))
                break
    if not spans:
        return
    said = b" ".join(scan.low[s:e] for s, e in spans)
    if said.isascii() and frozenset(said.translate(_WORD_BYTES).split()).isdisjoint(_GATE):
        return            # no word any of the English readers starts from, and no other language
    # the comment lines alone, a blank line where code came between them; origin: each line's line in the file
    out: list[bytes] = []
    origin: list[int] = []
    last, prev = -1, -2
    for s, e in sorted(spans, key=lambda se: (se[0], -se[1])):
        if s < last:
            continue          # a docstring's first line, also read as a comment
        ln = scan.line_of(s)
        if ln > prev + 1:
            out.append(b"")
            origin.append(ln)
        for j, part in enumerate(scan.data[s:e].split(b"\n")):
            out.append(part)
            origin.append(ln + j)
        last, prev = e, origin[-1]
    # read as prose is read (negation, teaching, quotes lower it), then graded as a script's text
    inner = type(scan)(b"\n".join(out) + b"\n", scan.file, "markdown", scan.security_topic, depth=scan.depth + 1)
    intent.check(inner)
    scopes.check(inner)
    languages.requests(inner)
    languages.concealment(inner)
    misreport.check(inner)
    for f in inner.finish():
        line = origin[min(max(f.line, 1), len(origin)) - 1]
        at = _offset_of_line(scan, line)
        # a comment block speaking to the agent: its paragraph (the comment lines around it)
        speaks = any(scan.line_of(s) <= line <= scan.line_of(e) + 4 and scan.line_of(s) >= line - 4
                     for s, e in agent)
        # (concealment in a script is read as prose is: no program shows its own comments to the user it would
        # mislead; a Markdown code block is an example shown)
        sev = f.severity if f.severity == "low" or speaks or f.rule == "override.conceal" and scan.kind == "script" \
            else "medium"
        scan.add(f.rule, sev, at, f.message + f" — in a comment of {where}" + (", addressed to the agent" if speaks else ""),
                 excerpt=f.excerpt, line=line)


def _offset_of_line(scan: Scan, line: int) -> int:
    i = 0
    for _ in range(line - 1):
        i = scan.data.find(b"\n", i) + 1
        if i <= 0:
            return 0
    return i
