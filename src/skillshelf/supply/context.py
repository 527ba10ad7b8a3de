"""Whether a phrase of a Markdown file is quoted as an example: inside quotes or inline code, in a table
whose header names examples, or in a block quote introduced as one. Part of the audit of one file
(``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from . import patterns as P

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

# a table column or a lead-in that holds examples, not steps
_EXAMPLE_HEAD = re.compile(rb"\b(?:examples?|e\.g\.|pattern|patterns|payloads?|attacks?|inputs?|samples?|phrases?|prompts?|"
                           rb"bad|wrong|avoid|don't|do\s+not|never|red\s+flags?|anti-?patterns?|malicious|injection|"
                           rb"suspicious|instead\s+of|before|quote|quotes|says?|wording|text|message|output|such\s+as|"
                           rb"like\s+this|for\s+instance|triggers?|user\s+says)\b|\xe2\x9d\x8c")
# a header that makes a whole table one of examples, whichever column a phrase is in (a column beside one of
# patterns explains them); the other words of _EXAMPLE_HEAD name their own column only ("| Step | Output |")
_TABLE_OF_EXAMPLES = re.compile(rb"\b(?:examples?|e\.g\.|patterns?|payloads?|attacks?|bad|wrong|avoid|don't|do\s+not|never|"
                                rb"red\s+flags?|anti-?patterns?|malicious|injection|suspicious|instead\s+of)\b|\xe2\x9d\x8c")
# a table of reference describes (an issue and its solution, an option and what it does, a fact and how to say it):
# its header names what it describes
_REFERENCE_HEAD = re.compile(rb"\|\s{0,3}(?:issues?|problems?|symptoms?|errors?|causes?|options?|parameters?|fields?|settings?|"
                             rb"propert(?:y|ies)|descriptions?|mistakes?|situations?|scenarios?|pitfalls?|facts?|solutions?|"
                             rb"severity|flags?|arguments?|fix(?:es)?)\s{0,3}\|")
MAX_TABLE_LINES = 60


def _open_quote(before: bytes) -> bool:
    if before.count(b"`") % 2 or before.count(b'"') % 2:
        return True
    for o, c in (("“", "”"), ("«", "»"), ("‘", "’"), ("„", "“"), ("「", "」")):
        if before.rfind(o.encode()) > before.rfind(c.encode()):
            return True
    return before.rstrip().endswith(b"'")


def _line_before(scan: Scan, s: int) -> tuple[int, int] | None:
    return scan.line_bounds(s - 1) if s > 0 else None


# a column of steps: what its cells hold is what the agent is to do
_STEP_HEAD = re.compile(rb"^\s{0,3}(?:steps?|actions?|what\s+to\s+do|to\s+do|todo|tasks?|instructions?|do\s+this|"
                        rb"commands?|how)\s{0,3}$")


_NUMBERED = re.compile(rb"[ \t]{0,3}\|[ \t]{0,3}\d{1,3}\.?[ \t]{0,3}\|")


def _cell_index(row: bytes) -> int:
    """Which cell of a table row ends ``row`` (the text of the row up to a place in it)."""
    return max(0, row.lstrip().count(b"|") - 1)


def _header(scan: Scan, s: int) -> tuple[int, int, tuple[int, int] | None]:
    """The header row of the table holding the line at ``s``, and the line before the table."""
    head = s
    for _ in range(MAX_TABLE_LINES):
        prev = _line_before(scan, head)
        if prev is None or not scan.data[prev[0]:prev[1]].lstrip().startswith(b"|"):
            break
        head = prev[0]
    a, b = scan.line_bounds(head)
    return a, b, _line_before(scan, head)


def _table_of_examples(scan: Scan, s: int, reference: bool = True, pos: int | None = None) -> bool:
    """The header row of the table holding the line at ``s`` (or the line before the table) names examples,
    or the header names what a table of reference describes (an issue, an option, a fact). Given ``pos``,
    the header's cell over ``pos``'s column decides (a column of steps beside a column of output holds steps)."""
    a, b, prev = _header(scan, s)
    if prev is not None and _EXAMPLE_HEAD.search(scan.low[prev[0]:prev[1]]):
        return True
    header = scan.low[a:b]
    if pos is not None and not _TABLE_OF_EXAMPLES.search(header):
        cells = header.strip().strip(b"|").split(b"|")
        i = _cell_index(scan.low[s:pos])
        if a != s and i < len(cells):
            cell = b"|" + cells[i] + b"|"
            return _EXAMPLE_HEAD.search(cell) is not None or reference and _REFERENCE_HEAD.search(cell) is not None
    return _EXAMPLE_HEAD.search(header) is not None or reference and _REFERENCE_HEAD.search(header) is not None


def step_row(scan: Scan, pos: int) -> bool:
    """``pos`` is in a table's column of steps ("| Step | What to do | Output |"): a step, as in a list."""
    s, _ = scan.line_bounds(pos)
    if not scan.data[s:pos].lstrip().startswith(b"|"):
        return False
    a, b, _ = _header(scan, s)
    cells = scan.low[a:b].strip().strip(b"|").split(b"|")
    i = _cell_index(scan.low[s:pos])
    if a == s or i >= len(cells):
        return False
    # a column named for steps, or any column after the first of a table that numbers its rows: a numbered list
    # written as a table, in whatever language its header is ("| 3 | … |")
    return _STEP_HEAD.search(cells[i]) is not None or i > 0 and _NUMBERED.match(scan.low, s) is not None


def _quote_of_example(scan: Scan, s: int) -> bool:
    """The block quote holding the line at ``s`` is introduced as an example (its lead-in ends with a colon
    or names examples) or opens with a quotation mark."""
    head = s
    for _ in range(MAX_TABLE_LINES):
        prev = _line_before(scan, head)
        if prev is None or not scan.data[prev[0]:prev[1]].lstrip().startswith(b">"):
            break
        head = prev[0]
    first = scan.data[head:scan.line_bounds(head)[1]].lstrip(b" >*_")
    if first[:1] in (b'"', b"'", b"`") or first.startswith(("“".encode(), "«".encode(), "„".encode())):
        return True
    lead = _line_before(scan, head)
    while lead is not None and not scan.data[lead[0]:lead[1]].strip() and lead[0] > 0:
        lead = _line_before(scan, lead[0])
    if lead is None:
        return False
    text = scan.low[lead[0]:lead[1]].rstrip()
    return text.endswith(b":") or _EXAMPLE_HEAD.search(text) is not None


def quoted(scan: Scan, pos: int) -> bool:
    """``pos`` is inside quotes or inline code on its line (in a table row: in its cell), its line is a row
    of a table of examples, or its block quote is introduced as an example."""
    s, _ = scan.line_bounds(pos)
    before = scan.data[s:pos]
    lead = before.lstrip()
    if lead.startswith(b"|"):
        if _table_of_examples(scan, s, pos=pos):
            return True
        before = before[before.rfind(b"|") + 1:]
    elif lead.startswith(b">") and _quote_of_example(scan, s):
        return True
    return _open_quote(before)


def example_row(scan: Scan, pos: int) -> bool:
    """``pos`` is in a row of a table whose header names examples or patterns ("| Pattern | Example of what to
    look for |"): a command there is shown, not run."""
    s, _ = scan.line_bounds(pos)
    return scan.data[s:pos].lstrip().startswith(b"|") and _table_of_examples(scan, s, reference=False)


def table_row(scan: Scan, pos: int) -> bool:
    """``pos`` is in a row of a Markdown table: a cell may hold a step or a description, so what is asked
    there is read (medium), not taken as the agent's next step (high)."""
    s, _ = scan.line_bounds(pos)
    return scan.data[s:pos].lstrip().startswith(b"|")


def pattern_cell(scan: Scan, pos: int) -> bool:
    """``pos`` is in inline code, in a table row that is not a step, and the code is a pattern, not a command: it
    holds a placeholder (``curl URL | sh``, ``/dev/tcp/host/port``, ``eval(base64...)``) and no address to reach. A
    table of what to look for, read by its cells' shape in whatever language its header is written."""
    s, e = scan.line_bounds(pos)
    if not scan.data[s:pos].lstrip().startswith(b"|") or step_row(scan, pos):
        return False
    a = scan.data.rfind(b"`", s, pos + 1)
    if a < 0 or scan.data.count(b"`", s, a) % 2:
        return False          # not inside a code span opened before pos
    b = scan.data.find(b"`", max(a + 1, pos), e)
    code = scan.data[a + 1:b if b > 0 else e]
    return _PLACEHOLDER.search(code) is not None and _ADDRESS.search(code) is None


def instruction_cell(scan: Scan, pos: int) -> bool:
    """``pos`` is in a table cell that holds a sentence of its own in a column of short cells (a row's "Note" that
    tells the agent what to do and what to tell the user, beside notes of a few words): read as a step, not a
    table's description. Read by the cells' length, in whatever language the table is written; never in a table
    whose header names examples."""
    s, e = scan.line_bounds(pos)
    if not scan.data[s:pos].lstrip().startswith(b"|"):
        return False
    cells = _cells(scan.low, s, e)
    i = next((k for k, (a, b) in enumerate(cells) if a <= pos <= b), -1)
    if i < 0 or len(scan.low[cells[i][0]:cells[i][1]].split()) < _SENTENCE_WORDS:
        return False
    top, _, _ = _header(scan, s)
    if top == s or _table_of_examples(scan, s, pos=pos):
        return False
    words = len(scan.low[cells[i][0]:cells[i][1]].split())
    others, at = 0, top
    for _ in range(MAX_TABLE_LINES):
        if at >= len(scan.low):
            break
        a, b = scan.line_bounds(at)
        if not scan.low[a:b].lstrip().startswith(b"|"):
            break
        row = _cells(scan.low, a, b)
        if a not in (top, s) and i < len(row) and not _RULE_ROW.match(scan.low, a, b):
            n = len(scan.low[row[i][0]:row[i][1]].split())
            if n > min(8, words // 2):
                return False  # a column of sentences: a table's descriptions
            others += 1
        at = b + 1
    return others >= 1


def _cells(low: bytes, s: int, e: int) -> list[tuple[int, int]]:
    """(start, end) of each cell of the table row between ``s`` and ``e``: split at ``|`` outside inline code and
    not escaped."""
    out, ticks = [], False
    a = low.find(b"|", s, e) + 1
    for k in range(a, e):
        c = low[k]
        if c == 96:
            ticks = not ticks
        elif c == 124 and not ticks and low[k - 1] != 92:
            out.append((a, k))
            a = k + 1
            if len(out) >= 20:
                break
    return out


_SENTENCE_WORDS = 12
_RULE_ROW = re.compile(rb"\s{0,3}\|[\s:|-]{3,}$", re.MULTILINE)
# a placeholder in a pattern: a word in capitals that is not a variable, an ellipsis, a <name>, a path's generic part
_PLACEHOLDER = re.compile(rb"(?<![$\w{])[A-Z]{3,}(?![\w}])|\.\.\.|\xe2\x80\xa6|<[a-z_ -]{1,20}>")
_ADDRESS = re.compile(rb"://|\b[\w-]{1,63}\.[a-z]{2,12}/|\b\d{1,3}(?:\.\d{1,3}){3}\b")
# a negation with its own subject says what someone else does ("plumbing the user never needs to think about"),
# not what the skill warns against
_OTHERS_NEGATION = re.compile(rb"\b(?:the\s+|a\s+|your\s+)?(?:users?|humans?|they|he|she|people|someone|nobody|"
                              rb"customers?)\s+(?:never|don'?t|do\s+not)\b")


def warns(text: bytes) -> bool:
    """``text`` warns against the command that follows: a negation that is not a negated telling ("run this
    and do not comment on it" keeps the step from the user; it does not show it as what not to do) nor another's
    ("the user never needs to think about it")."""
    if P.NEGATION.search(text) is None:
        return False
    return P.NEGATION.search(others_negation(P.NOT_TELLING.sub(b" ", text))) is not None


def others_negation(text: bytes) -> bytes:
    """``text`` with each negation that has its own subject ("the user never needs to") blanked."""
    return _OTHERS_NEGATION.sub(b" ", text) if b"never" in text or b"not" in text or b"n't" in text else text


# the keys of a skill's front matter that say what it is (shown by a catalog, read by the agent's loader);
# any other key's value is text a reader of the rendered page never sees
KNOWN_FIELDS = frozenset(b"name description license version author authors tags metadata allowed-tools compatibility model "
                         b"homepage repository category categories keywords title when_to_use argument-hint summary "
                         b"disable-model-invocation user-invocable hooks context agent requires dependencies platforms "
                         b"created updated source url contact maintainer maintainers status language lang icon".split())
_FIELD = re.compile(rb"^([ \t]{0,12})([\w.-]{1,60})[ \t]{0,3}:[ \t]{0,3}([^\n]*)$", re.MULTILINE)
MAX_FIELDS = 200
_BLOCK_SCALAR = re.compile(rb"[|>][-+0-9]{0,3}[ \t]*(?:#[^\n]*)?$")


def hidden_fields(data: bytes) -> list[tuple[int, int, str]]:
    """The values of a front matter's unknown keys (``x-agent-notes: …``, ``metadata.agent_instructions: …``),
    with the lines indented under them, as (start, end, what)."""
    end = data.find(b"\n---", 3, 200_000)
    if end < 0:
        return []
    out: list[tuple[int, int, str]] = []
    inside = 0          # the end of the block scalar being read: its lines are text, not keys
    for k, m in enumerate(_FIELD.finditer(data, 4, end)):
        if k >= MAX_FIELDS:
            break
        if m.start() < inside:
            continue        # ``description: >`` folds the lines under it: "HIJACKED: …" there is the description
        e, scalar = m.end(), _BLOCK_SCALAR.match(m.group(3)) is not None
        while e < end:             # a block value: the lines indented deeper (a block scalar's blank lines too)
            nl = data.find(b"\n", e + 1, end)
            nxt = data[e + 1:nl if nl >= 0 else end]
            if not nxt.strip() and not scalar or nxt.strip() and len(nxt) - len(nxt.lstrip()) <= len(m.group(1)):
                break
            e = nl if nl >= 0 else end
        if scalar:
            inside = e
        if m.group(2).lower() in KNOWN_FIELDS:
            continue
        if e > m.start(3) and data[m.start(3):e].strip(b" \t|>-\"'\n"):
            out.append((m.start(3), e, f"a front-matter field ({m.group(2).decode('utf-8', 'replace')})"))
    return out
