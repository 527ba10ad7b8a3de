"""The audit of one file's bytes: where each rule looks, and how the context of a match (a
code block, a quote, an HTML comment, a section about attacks, a warning) sets its severity.

Works on the UTF-8 bytes and their ``bytes.lower()`` (same offsets, ASCII lower-cased), so a
file is never decoded unless it holds characters outside ASCII that need a closer look.
Offsets are byte offsets; lines are 1-based. See ``skillshelf.supply.file_audit`` for the rules and their
severities.
"""

from __future__ import annotations

import bisect
import re

from . import (
    asks,
    capabilities,
    commands,
    comments,
    context,
    fetch_use,
    flows,
    intent,
    intent_model,
    invisible,
    languages,
    lexicon,
    misreport,
    patterns as P,
    places,
    pushes,
    run_keys,
    scopes,
    shapes,
    traces,
    view,
)
from .rules import (
    EXCERPT_BYTES,
    MAX_LINES_PER_RULE,
    MAX_LOGICAL_LINE,
    MAX_MARKS,
    RANK,
    RULES,
    WINDOW,
    Finding,
    visible,
)

MAX_FINDINGS_PER_RULE = 5
MAX_COMMENTS = 1_000
MAX_BLOBS = 10
QUOTED = " (quoted as an example)"      # the note of a phrase graded as quoted
MAX_HIDDEN_BYTES = 1_000_000
MAX_HIDDEN_REGIONS = 1_000


class Scan:
    """The findings of one file. The Markdown structure (code blocks, headings, HTML comments)
    is worked out once, the first time a rule needs it."""

    def __init__(self, data: bytes, file: str, kind: str, security_topic: bool, *, depth: int = 0,
                 hidden_why: str | None = None, sentences: intent_model.SentenceModel | None = None):
        self.data, self.file, self.kind, self.depth = data, file, kind, depth
        self.sentences = sentences        # the learned model of intent, when there is one
        self.low = data.lower()
        self.security_topic = security_topic
        self.hidden_why = hidden_why      # the whole text is hidden (decoded, spelled invisibly)
        self.findings: list[Finding] = []
        self._counts: dict[str, int] = {}
        self._more: dict[str, int] = {}
        self._seen: set[tuple[str, int]] = set()
        self._found_at: list[int] = []    # where each finding was made (offsets), kept or not
        self._fences: list[tuple[int, int]] | None = None
        self._headings: list[tuple[int, int, bytes]] | None = None
        self._comments: list[tuple[int, int]] | None = None
        self._padded: list[tuple[int, int]] = []
        self._linktext: list[tuple[int, int, str]] | None = None
        self._trigger_hits: dict[re.Pattern, list[int]] = {}
        self._newlines: list[int] | None = None
        self._has: dict[bytes, bool] = {}
        self._shape: bytes | None = None
        self._words: frozenset[bytes] | None = None

    def has(self, *words: bytes) -> bool:
        """Whether any of ``words`` is in the lower-cased text (each looked for once per file)."""
        for w in words:
            v = self._has.get(w)
            if v is None:
                v = self._has[w] = w in self.low
            if v:
                return True
        return False

    @property
    def words(self) -> frozenset[bytes]:
        """The words of the lower-cased text (runs of a-z and 0-9): one pass tells which of the
        rules' key words are there, instead of one pass for each."""
        if self._words is None:
            self._words = frozenset(self.low.translate(_WORD_BYTES).split())
        return self._words

    # --- recording ---------------------------------------------------------------------------
    def line_of(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer(b"\n", self.data)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def add(self, rule: str, severity: str, pos: int, message: str, *, excerpt: str | bytes | None = None,
            line: int | None = None, shown_as: str | None = None) -> None:
        line = self.line_of(pos) if line is None else line
        if (rule, line) in self._seen:
            # a line of prose one reader graded as quoted (a phrase in quotes or inline code) and another reads as a
            # step takes the step's reading; any other grade, or a table's row, stays the first reader's
            for i, f in enumerate(self.findings):
                if f.rule == rule and f.line == line and f.message.endswith(QUOTED) and RANK[severity] > RANK[f.severity] \
                        and self.kind == "markdown" and not context.table_row(self, pos):
                    self.findings[i] = Finding(rule, severity, self.file, line, f.excerpt, message)
                    break
            return
        self._seen.add((rule, line))
        self._found_at.append(pos)
        if self._counts.get(rule, 0) >= MAX_FINDINGS_PER_RULE:
            self._more[rule] = self._more.get(rule, 0) + 1
            # a later finding of a higher severity replaces the lowest one kept
            kept = [i for i, f in enumerate(self.findings) if f.rule == rule]
            lowest = min(kept, key=lambda i: RANK[self.findings[i].severity])
            if RANK[severity] <= RANK[self.findings[lowest].severity]:
                return
            del self.findings[lowest]
        else:
            self._counts[rule] = self._counts.get(rule, 0) + 1
        if excerpt is None:
            excerpt = self.excerpt_at(pos)
        if isinstance(excerpt, bytes):
            excerpt = excerpt.decode("utf-8", "replace")
        self.findings.append(Finding(rule, severity, self.file, line, visible(excerpt) if shown_as is None else shown_as,
                                     message))

    def excerpt_at(self, pos: int) -> bytes:
        s, e = self.line_bounds(pos)
        if e - s > EXCERPT_BYTES // 2:     # centre a long line's excerpt on what was found
            s = max(s, pos - 60)
        return self.data[s:min(e, s + EXCERPT_BYTES)]

    def finish(self) -> list[Finding]:
        out = []
        last = {f.rule: i for i, f in enumerate(self.findings)}
        for i, f in enumerate(self.findings):
            more = self._more.get(f.rule)
            if more and last[f.rule] == i:
                f = Finding(f.rule, f.severity, f.file, f.line, f.excerpt,
                            f"{f.message} (and {more} more like it in this file)")
            out.append(f)
        return sorted(out, key=lambda f: (f.line, f.rule))

    # --- lines -------------------------------------------------------------------------------
    def line_bounds(self, pos: int) -> tuple[int, int]:
        """The line around ``pos``; of a line longer than ``WINDOW`` either side, that window."""
        lo = max(0, pos - WINDOW)
        s = self.data.rfind(b"\n", lo, pos) + 1
        if s == 0:
            s = lo
        hi = min(len(self.data), pos + WINDOW)
        e = self.data.find(b"\n", pos, hi)
        return s, (hi if e < 0 else e)

    def logical_line(self, pos: int) -> tuple[int, int]:
        """The command a position is part of: its line joined with the lines it continues and
        that continue it (``\\`` at the end; in code also ``|`` or ``&&``), at most 20 each way."""
        s, e = self.line_bounds(pos)
        code = self.kind != "markdown" or self.fence_at(pos) is not None
        ends = (b"\\", b"|", b"&&") if code else (b"\\",)
        for _ in range(20):
            if s == 0:
                break
            ps, pe = self.line_bounds(s - 1)
            if self.low[ps:pe].rstrip().endswith(ends):
                s = ps
            else:
                break
        for _ in range(20):
            if e >= len(self.data) or not self.low[s:e].rstrip().endswith(ends):
                break
            e = self.line_bounds(e + 1)[1]
        return s, min(e, s + MAX_LOGICAL_LINE)

    def candidates(self, triggers: list[re.Pattern], what: str) -> list[tuple[int, int]]:
        """The logical lines (start, end) holding a trigger, in order, at most MAX_LINES_PER_RULE."""
        hits: list[int] = []
        for rx in triggers:
            found = self._trigger_hits.get(rx)
            if found is None:
                found = self._trigger_hits[rx] = []
                for m in rx.finditer(self.low):
                    found.append(m.start())
                    if len(found) > 4 * MAX_LINES_PER_RULE:
                        break
            hits.extend(found)
        hits.sort()
        out: list[tuple[int, int]] = []
        last_end = -1
        for h in hits:
            if h <= last_end:
                continue
            s, e = self.logical_line(h)
            out.append((s, e))
            last_end = max(e, h)
            if len(out) >= MAX_LINES_PER_RULE:
                self.add("files.not-audited", "medium", h, f"more than {MAX_LINES_PER_RULE:,} lines to check for "
                         f"{what}: the rest of the file was not checked for it")
                break
        return out

    # --- Markdown structure --------------------------------------------------------------------
    @property
    def fences(self) -> list[tuple[int, int]]:
        """Fenced code blocks as (start of the opening line, end of the closing fence). An
        unclosed fence is not a code block (a Markdown reader shows it as text)."""
        if self._fences is None:
            self._fences = []
            if self.kind == "markdown":
                marks: list[tuple[int, int, int, int]] = []
                for tick in (b"```", b"~~~"):
                    i = self.data.find(tick)
                    while i >= 0 and len(marks) < MAX_MARKS:
                        ls = self.data.rfind(b"\n", 0, i) + 1
                        if i - ls <= 3 and not self.data[ls:i].strip(b" "):
                            j = i
                            while j < len(self.data) and self.data[j] == tick[0]:
                                j += 1
                            marks.append((ls, tick[0], j - i, j))
                            nl = self.data.find(b"\n", j)
                            if nl < 0:
                                break
                            i = self.data.find(tick, nl)
                        else:
                            i = self.data.find(tick, i + 3)
                marks.sort()
                opened = None
                for ls, ch, n, end in marks:
                    if opened is None:
                        opened = (ls, ch, n)
                    elif ch == opened[1] and n >= opened[2]:
                        self._fences.append((opened[0], end))
                        opened = None
        return self._fences

    def fence_at(self, pos: int) -> tuple[int, int] | None:
        f = self.fences
        if not f:
            return None
        i = bisect.bisect_right(f, (pos, len(self.data) + 1)) - 1
        if i >= 0 and f[i][0] <= pos < f[i][1]:
            return f[i]
        return None

    @property
    def headings(self) -> list[tuple[int, int, bytes]]:
        if self._headings is None:
            self._headings = []
            if self.kind == "markdown":
                i = 0 if self.data.startswith(b"#") else self.data.find(b"\n#")
                while i >= 0 and len(self._headings) < MAX_MARKS:
                    start = i if i == 0 and self.data.startswith(b"#") else i + 1
                    j = start
                    while j < len(self.data) and j - start < 7 and self.data[j] == 0x23:
                        j += 1
                    level = j - start
                    if 1 <= level <= 6 and j < len(self.data) and self.data[j] in b" \t" \
                            and self.fence_at(start) is None:
                        e = self.data.find(b"\n", j)
                        e = len(self.data) if e < 0 else min(e, j + 200)
                        self._headings.append((start, level, self.low[j:e]))
                    i = self.data.find(b"\n#", start + 1)
        return self._headings

    def section_is_about_attacks(self, pos: int) -> bool:
        """True when a heading over ``pos`` (the nearest of each level above it) speaks of
        attacks, anti-patterns, what not to do, or security."""
        hs = self.headings
        i = bisect.bisect_right(hs, (pos, 99, b"")) - 1
        level, steps = 7, 0
        while i >= 0 and level > 1 and steps < 200:
            _, lvl, title = hs[i]
            if lvl < level:
                if P.ATTACK_HEADING.search(title) or (not title.isascii() or not self.data.isascii()) \
                        and lexicon.about_security(title, self.data, self.words):
                    return True
                level = lvl
            i -= 1
            steps += 1
        return False

    @property
    def comments(self) -> list[tuple[int, int]]:
        """HTML comments outside code blocks as (start, end); an unclosed one runs to the end
        (a Markdown renderer hides the rest of the file)."""
        if self._comments is None:
            self._comments = []
            if self.kind == "markdown":
                i = self.data.find(b"<!--")
                while i >= 0 and len(self._comments) < MAX_COMMENTS:
                    fence = self.fence_at(i)
                    if fence is not None:
                        i = self.data.find(b"<!--", fence[1])
                        continue
                    j = self.data.find(b"-->", i + 4)
                    end = len(self.data) if j < 0 else j + 3
                    ls = self.data.rfind(b"\n", 0, i) + 1
                    if self.data.count(b"`", ls, i) % 2:
                        i = self.data.find(b"<!--", i + 4)      # `<!-- … -->` in inline code is shown, not hidden
                        continue
                    self._comments.append((i, end))
                    i = self.data.find(b"<!--", end)
        return self._comments

    def hidden_at(self, pos: int) -> str | None:
        """Why text at ``pos`` is hidden from a reader of the rendered file, or None."""
        if self.hidden_why:
            return self.hidden_why
        for s, e in self.comments:
            if s <= pos < e:
                return "inside an HTML comment (hidden when rendered)"
            if s > pos:
                break
        for s, e in self._padded:
            if s <= pos < e:
                return "past a run of padding spaces (off screen)"
        lt = self.linktext
        i = bisect.bisect_right(lt, (pos, len(self.data) + 1, "")) - 1
        if i >= 0 and lt[i][0] <= pos < lt[i][1]:
            return f"in {lt[i][2]} (not shown when rendered)"
        return None

    @property
    def linktext(self) -> list[tuple[int, int, str]]:
        """Markdown text a reader never sees rendered, outside code: image alt text, link titles
        and link reference definitions, as (start, end, what)."""
        if self._linktext is None:
            self._linktext = []
            if self.kind == "markdown" and (b"](" in self.data or b"]:" in self.data or b"<" in self.data):
                for rx, what in ((P.IMG_ALT, "an image's alt text"), (P.LINK_TITLE, "a link's title"),
                                 (P.REF_DEF, "a link reference definition"), (P.HTML_ATTR, "an HTML attribute")):
                    if rx is P.REF_DEF and b"]:" not in self.data:
                        continue
                    for m in (P.html_attributes(self.low) if rx is P.HTML_ATTR else rx.finditer(self.data)):
                        if len(self._linktext) >= MAX_HIDDEN_REGIONS:
                            break
                        g = next(k for k in ("t", "a", "b", "c", "u") if m.groupdict().get(k) is not None)
                        s, e = m.start(g), m.end(g)
                        ls, _ = self.line_bounds(s)
                        if self.fence_at(s) is not None or self.data[ls:m.start()].count(b"`") % 2:
                            continue      # shown as code, not rendered as a link
                        self._linktext.append((s, e, what))
            if self.kind == "markdown" and self.depth == 0 and self.data.startswith(b"---"):
                self._linktext += context.hidden_fields(self.data)
            self._linktext.sort()
        return self._linktext

    # --- context -----------------------------------------------------------------------------
    def quoted(self, pos: int) -> bool:
        """``pos`` is quoted as an example (``skillshelf.supply.context``)."""
        return context.quoted(self, pos)

    def near_negation(self, pos: int, s: int, e: int) -> bool:
        """The command at ``pos`` (logical line ``s``..``e``) is shown as what not to do: its line,
        the two lines before it, or the two lines before its code block say so."""
        if context.warns(self.low[s:e]):
            return True
        for start in (s, *(f[0] for f in [self.fence_at(pos)] if f is not None)):
            a = start
            for _ in range(2):
                if a == 0:
                    break
                a = self.line_bounds(a - 1)[0]
            if a < start and context.warns(self.low[a:start]):
                return True
        return False

    def grade_command(self, rule: str, pos: int, s: int, e: int) -> tuple[str, str]:
        """(severity, a note for the message) of a risky command found at ``pos``."""
        hidden = self.hidden_at(pos)
        if hidden:
            return "high", f" — {hidden}"
        if self.kind == "markdown" and (self.near_negation(pos, s, e) or self.section_is_about_attacks(pos)
                                        or context.example_row(self, pos)):
            return "low", " (shown as an example or a warning)"
        if self.kind == "markdown" and RULES[rule].severity == "high" and context.table_row(self, pos) and (
                self.security_topic or context.pattern_cell(self, pos)):
            # a skill about security tabulates what to look for, in any language of its table's header; a cell
            # holding a pattern with a placeholder (``curl URL | sh``) names what to look for, not a step
            return "medium", (" (in a table of a skill about security)" if self.security_topic
                              else " (a pattern in a table, with a placeholder and no address)")
        return RULES[rule].severity, ""

    def grade_phrase(self, rule: str, pos: int, since: int = 0) -> tuple[str, str]:
        """(severity, a note) of an override or conceal phrase at ``pos``; ``since``: where its
        sentence starts, when it is known (a paragraph on one line is read from there for words of
        teaching: "after two attempts" in the sentence before teaches nothing; a negation is read from
        the line's start, as "Do not …; add …" sets the rest of the line aside)."""
        hidden = self.hidden_at(pos)
        if hidden:
            return "high", f" — {hidden}"
        if self.kind == "markdown":
            s, e = self.line_bounds(pos)
            if self.fence_at(pos) is not None or self.quoted(pos):
                return "low", QUOTED
            row = context.table_row(self, pos)
            if row:
                if not context.step_row(self, pos) and not context.instruction_cell(self, pos):
                    return "medium", " (in a table row)"
                # a step in a table's cell: read as a step, its own cell only (and never below a table's row)
                s, e = max(s, self.low.rfind(b"|", s, pos) + 1), _cell_end(self.low, pos, e)
            t = max(s, min(since, pos))
            if self.section_is_about_attacks(pos) or P.TEACHING.search(_EMAIL.sub(b" ", P.URL.sub(b" ", self.low[t:e]))) \
                    or P.NEGATION.search(context.others_negation(_PURPOSE.sub(b" ", self.low[s:pos]))):
                if row:
                    return "medium", " (in a table row)"
                return "low", " (in a passage about attacks or what not to do)"
            if self.security_topic and self.low[s:pos].lstrip()[:1] in (b"-", b"*", b"+") + tuple(b"0123456789"):
                return "low", " (listed by a skill about security)"
            return RULES[rule].severity, ""
        if self.security_topic:
            return "low", " (in a skill about security)"
        return "medium", " (text a script may show the agent)"

    # --- the rules -----------------------------------------------------------------------------
    def run(self) -> list[Finding]:
        if self.depth == 0:
            self.check_shape()
        self.check_invisible()
        self.check_commands()
        self.check_flows()
        fetch_use.check(self)
        shapes.check(self)
        run_keys.check(self)
        capabilities.check(self)
        self.check_override()
        self.check_requests()
        intent.check(self)
        scopes.check(self)
        scopes.claims(self)
        misreport.check(self)
        languages.concealment(self)
        languages.requests(self)
        comments.check(self)
        pushes.check(self)
        traces.check(self)
        if self.sentences is not None and not self.hidden_why:
            intent_model.check(self, self.sentences)
        self.check_tokens()
        if self.kind == "markdown":
            self.check_comments()
            self.check_link_text()
            places.check(self)
        if self.depth == 0 and not self.hidden_why:
            self.check_view()
        return self.finish()

    @property
    def shape(self) -> bytes:
        """The text with letters, digits, + and / as ``a``, spaces and tabs as `` ``, the rest ``.``."""
        if self._shape is None:
            self._shape = self.data.translate(_SHAPE)
        return self._shape

    def check_shape(self) -> None:
        """Padding, very long lines and base64 blobs: one translation of the bytes shows
        whether the file can hold any, before the exact patterns run."""
        shape = self.shape
        if self.kind == "markdown" and shape.find(b" " * 100) >= 0:
            self.check_padding()
        if len(self.data) >= P.LONG_LINE:
            self.check_long_lines()
        if shape.find(b"a" * 300) >= 0:
            self.check_blobs()

    def check_padding(self) -> None:
        for m in P.PADDING.finditer(self.data):
            s, e = self.line_bounds(m.start())
            line = self.data[s:e].strip()
            if line.startswith(b"|") or "│".encode() in line or "║".encode() in line \
                    or self.fence_at(m.start()) is not None:
                continue      # tables and box drawings align their columns with spaces
            if len(self._padded) >= MAX_HIDDEN_REGIONS:
                break
            self._padded.append((m.end(), e))
            self.add("hidden.padding", self._hidden_severity(m.end(), e), m.end(),
                     f"{len(m.group()):,} spaces push text to column {m.end() - s:,}, past what an editor shows",
                     excerpt=self.data[m.end():e])

    def _hidden_severity(self, s: int, e: int) -> str:
        """Hidden text that names a secret file, or a URL with something to do with it (send,
        fetch, run, open…), is high; other hidden text medium."""
        part = self.low[s:min(e, s + 20_000)]
        if P.SECRET_PATH.search(part) or (P.URL.search(part) and P.ACTION.search(P.URL.sub(b" ", part))):
            return "high"
        return "medium"

    def check_long_lines(self) -> None:
        # a line of LONG_LINE bytes holds a whole window of LONG_LINE / 2 aligned bytes without a
        # newline: only those windows are looked at
        step = P.LONG_LINE // 2
        last = -1
        for k in range(0, len(self.data), step):
            if k <= last or self.data.find(b"\n", k, k + step) >= 0 or k + step > len(self.data):
                continue
            s = self.data.rfind(b"\n", 0, k) + 1          # the whole line, once per long line
            e = self.data.find(b"\n", k)
            e = len(self.data) if e < 0 else e
            last = e
            if e - s >= P.LONG_LINE:
                self.add("hidden.long-line", "low", s, f"a line of {e - s:,} bytes: editors and diffs show only "
                         "its start")

    def check_blobs(self) -> None:
        n = 0
        for m in P.BLOB.finditer(self.data):
            head = self.low[max(0, m.start() - 40):m.start()]
            if b"base64," in head or b"data:" in head:
                continue          # a data: URI (an inline image)
            blob = m.group()
            sample = blob[:400]
            if not (any(48 <= c <= 57 for c in sample) and any(65 <= c <= 90 for c in sample)
                    and any(97 <= c <= 122 for c in sample)):
                continue          # a long path or words glued by slashes: not base64
            n += 1
            if n > MAX_BLOBS:
                break
            decoded = P.decode_b64(blob)
            inner: list[Finding] = []
            if decoded is not None and self.depth == 0:
                inner = self.audit_hidden(decoded, m.start(), "decoded from a base64 blob")
            if inner:
                self.add("encoded.blob", "high", m.start(), f"a base64 blob of {len(blob):,} characters that decodes "
                         f"to text an agent would act on: {inner[0].message}", excerpt=blob[:80])
            else:
                self.add("encoded.blob", "low", m.start(), f"a base64 blob of {len(blob):,} characters"
                         + (" that decodes to text" if decoded is not None else ""), excerpt=blob[:80])

    def check_invisible(self) -> None:
        invisible.check(self)

    def check_commands(self) -> None:
        commands.check(self)

    def _report(self, rule: str, at: int, s: int, e: int, message: str) -> bool:
        sev, note = self.grade_command(rule, at, s, e)
        self.add(rule, sev, at, message + note)
        return True

    def _report_fetch(self, at: int, s: int, e: int, url: str, message: str) -> bool:
        sev, note = self.grade_command("exec.fetch-and-run", at, s, e)
        if sev == "high" and not self.hidden_at(at) and P.known_installer(url):
            sev, note = "medium", " (the documented installer of a well-known tool, over HTTPS)"
        self.add("exec.fetch-and-run", sev, at, message.format(url=url) + note)
        return True

    def check_flows(self) -> None:
        flows.check(self)

    def check_requests(self) -> None:
        asks.check_requests(self)

    def check_tokens(self) -> None:
        asks.check_tokens(self)

    def check_link_text(self) -> None:
        asks.check_link_text(self)

    def check_view(self) -> None:
        view.check(self)

    def check_override(self) -> None:
        for rule, rx, triggers in (("override.instructions", P.OVERRIDE, P.TRIG_OVERRIDE),
                                   ("override.conceal", P.CONCEAL,
                                    P.TRIG_CONCEAL + (P.TRIG_CONCEAL_MORE if self.words & _CONCEAL_WORDS else []))):
            examined = 0
            for s, e in self.candidates(triggers, "instructions to the agent"):
                for m in rx.finditer(self.low[s:e]):
                    examined += 1
                    if examined > MAX_LINES_PER_RULE:
                        break
                    if (rule, self.line_of(s + m.start())) in self._seen:
                        continue
                    phrase = m.group()
                    if rule == "override.instructions" and not P.OVERRIDE_POINTER.search(phrase) \
                            and not phrase.rstrip().endswith((b"above", b"before")) \
                            and phrase.startswith((b"ignore", b"disregard", b"forget", b"override", b"bypass", b"skip")):
                        continue
                    at = s + m.start()
                    if rule == "override.instructions" and P.DEFENSIVE_OBJECT.match(self.low, s + m.end()) \
                            and not self.hidden_at(at):
                        self.add(rule, "low", at, f"{RULES[rule].title}: {self._shown(at, phrase)!r} (instructions "
                                 "found in files or tool output: a safeguard against injection)")
                        continue
                    if rule == "override.conceal" and phrase.startswith((b"without", b"silently", b"quietly", b"secretly",
                                                                         b"covertly")) \
                            and P.NEGATION.search(self.low[max(s, at - 80):at].replace(b"not ", b"never ")):
                        continue  # "never push without telling the user": a safeguard, not concealment
                    sev, note = self.grade_phrase(rule, at)
                    if rule == "override.conceal" and sev == "high" and not self.hidden_at(at):
                        end = s + m.end()
                        stop = [i for i in (self.low.find(b".", end, end + 60), self.low.find(b"\n", end, end + 60)) if i >= 0]
                        # what is kept back is named in the phrase, after it, or (when the phrase names no
                        # object of its own: "it", "this", "without telling…") earlier in its sentence
                        names_object = _OWN_OBJECT.match(phrase) and not _PRONOUN.search(phrase)
                        begin = at if names_object else asks.sentence(self, at, at)[0] if at - s < 200 else at
                        if not P.CONCEAL_ACTION.search(self.low, max(begin, at - 200), min(stop) if stop else end + 60) \
                                and not (_PRONOUN.search(phrase) and not intent.DISPLAY.search(phrase)
                                         and intent.step_before(self.low, begin)):
                            sev, note = "medium", " (what it keeps back is not an action of the agent's)"
                    self.add(rule, sev, at, f"{RULES[rule].title}: {self._shown(at, phrase)!r}{note}")

    def _shown(self, at: int, phrase: bytes) -> str:
        return visible(self.data[at:at + len(phrase)].decode("utf-8", "replace"), 80)

    def check_comments(self) -> None:
        for s, e in self.comments:
            if any(s <= p < e for p in self._found_at):
                continue          # what is hidden there is reported (high) by its own rule
            ls, _ = self.line_bounds(s)
            if self.data[ls:s].count(b"`") % 2:
                continue          # `<!-- … -->` in inline code is shown, not hidden
            body = P.URL.sub(b" ", self.low[s + 4:min(e, s + 4 + 20_000)])
            if len(body.split(None, 5)) >= 5 and len(P.INSTRUCTION_LIKE.findall(body, 0, 4000)) >= 2:
                self.add("hidden.html-comment", self._hidden_severity(s + 4, min(e, s + 4 + 20_000)), s,
                         "an HTML comment that reads like instructions: the agent sees it, a reader of the rendered "
                         "skill does not", excerpt=self.data[s:min(e, s + 300)])

    def audit_hidden(self, data: bytes, pos: int, why: str, line: int | None = None) -> list[Finding]:
        """Audit text a reader cannot see (spelled in invisible characters, decoded from a
        blob); anything found there is high, reported at ``pos`` (or ``line``)."""
        inner = Scan(data[:MAX_HIDDEN_BYTES], self.file, "script" if self.kind == "script" else "text",
                     self.security_topic, depth=self.depth + 1, hidden_why=why)
        inner.check_commands()
        inner.check_flows()
        capabilities.check(inner)
        inner.check_override()
        inner.check_requests()
        intent.check(inner)
        scopes.check(inner)
        languages.concealment(inner)
        languages.requests(inner)
        inner.check_tokens()
        line = line if line is not None else self.line_of(pos)
        found = inner.finish()
        for f in found:
            self.add(f.rule, "high", pos, f.message, excerpt=f"{why}: {f.excerpt}", line=line)
        return found


_SHAPE = bytes(0x61 if (0x30 <= i <= 0x39 or 0x41 <= i <= 0x5A or 0x61 <= i <= 0x7A or i in (0x2B, 0x2F))
               else 0x20 if i in (0x20, 0x09) else 0x2E for i in range(256))
# a negation in a clause of purpose states a goal ("add them to .gitignore so they don't come back"); it warns
# against nothing that follows
_PURPOSE = re.compile(rb"\bso\s+(?:that\s+)?(?:\w+\s+){0,2}(?:don't|do\s+not|doesn't|does\s+not|won't|will\s+not|"
                      rb"can't|cannot|never)\b")


def _cell_end(low: bytes, pos: int, e: int) -> int:
    """Where the table cell holding ``pos`` ends: the next ``|`` outside inline code, or ``e``."""
    ticks = low.count(b"`", low.rfind(b"|", 0, pos) + 1, pos) % 2
    for i in range(pos, e):
        c = low[i]
        if c == 96:
            ticks ^= 1
        elif c == 124 and not ticks:
            return i
    return e


_EMAIL = re.compile(rb"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}")


# "hide the spinner from the user": the phrase names what it keeps back
_OWN_OBJECT = re.compile(rb"(?:hide|conceal|keep)\s+(?:the|a|an|any|all|your)\s")
_PRONOUN = re.compile(rb"\b(?:it|this|that|them|these|those|anything|everything)\b")
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))
_CONCEAL_WORDS = frozenset((b"not", b"t", b"never", b"need", b"without", b"keep", b"silently", b"quietly", b"secretly",
                            b"omit", b"leave", b"exclude", b"stay", b"say", b"remain"))
