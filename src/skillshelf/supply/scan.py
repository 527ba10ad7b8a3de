"""The audit of one file's bytes: where each rule looks, and how the context of a match (a
code block, a quote, an HTML comment, a section about attacks, a warning) sets its severity.

Works on the UTF-8 bytes and their ``bytes.lower()`` (same offsets, ASCII lower-cased), so a
file is never decoded unless it holds characters outside ASCII that need a closer look.
Offsets are byte offsets; lines are 1-based. See ``skillshelf.supply.file_audit`` for the rules and their
severities.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re

from . import patterns as P
from .rules import RANK, RULES, Finding, visible

MAX_FINDINGS_PER_RULE = 5
MAX_LINES_PER_RULE = 2_000
# a logical line (joined continuation lines) longer than this is looked at in its first part
MAX_LOGICAL_LINE = 8_000
MAX_COMMENTS = 1_000
MAX_BLOBS = 10
MAX_HIDDEN_BYTES = 1_000_000
EXCERPT_BYTES = 400
# a line is looked at this far either side of a position: a line of a megabyte costs no more
# per match than a short one
WINDOW = 4_000
MAX_MARKS = 20_000          # code fence marks and headings taken from one file
MAX_HIDDEN_REGIONS = 1_000


class Scan:
    """The findings of one file. The Markdown structure (code blocks, headings, HTML comments)
    is worked out once, the first time a rule needs it."""

    def __init__(self, data: bytes, file: str, kind: str, security_topic: bool, *, depth: int = 0,
                 hidden_why: str | None = None):
        self.data, self.file, self.kind, self.depth = data, file, kind, depth
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
                if P.ATTACK_HEADING.search(title):
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
                    for m in rx.finditer(self.low if rx is P.HTML_ATTR else self.data):
                        if len(self._linktext) >= MAX_HIDDEN_REGIONS:
                            break
                        g = next(k for k in ("t", "a", "b", "c", "u") if m.groupdict().get(k) is not None)
                        s, e = m.start(g), m.end(g)
                        ls, _ = self.line_bounds(s)
                        if self.fence_at(s) is not None or self.data[ls:m.start()].count(b"`") % 2:
                            continue      # shown as code, not rendered as a link
                        self._linktext.append((s, e, what))
                self._linktext.sort()
        return self._linktext

    # --- context -----------------------------------------------------------------------------
    def quoted(self, pos: int) -> bool:
        """``pos`` is inside quotes or inline code on its line, or its line is a block quote or
        a table row."""
        s, _ = self.line_bounds(pos)
        before = self.data[s:pos]
        if before.lstrip().startswith((b">", b"|")):
            return True
        if before.count(b"`") % 2 or before.count(b'"') % 2:
            return True
        for o, c in (("“", "”"), ("«", "»"), ("‘", "’")):
            if before.rfind(o.encode()) > before.rfind(c.encode()):
                return True
        return before.rstrip().endswith(b"'")

    def near_negation(self, pos: int, s: int, e: int) -> bool:
        """The command at ``pos`` (logical line ``s``..``e``) is shown as what not to do: its line,
        the two lines before it, or the two lines before its code block say so."""
        if P.NEGATION.search(self.low[s:e]):
            return True
        for start in (s, *(f[0] for f in [self.fence_at(pos)] if f is not None)):
            a = start
            for _ in range(2):
                if a == 0:
                    break
                a = self.line_bounds(a - 1)[0]
            if a < start and P.NEGATION.search(self.low[a:start]):
                return True
        return False

    def grade_command(self, rule: str, pos: int, s: int, e: int) -> tuple[str, str]:
        """(severity, a note for the message) of a risky command found at ``pos``."""
        hidden = self.hidden_at(pos)
        if hidden:
            return "high", f" — {hidden}"
        if self.kind == "markdown" and (self.near_negation(pos, s, e) or self.section_is_about_attacks(pos)):
            return "low", " (shown as an example or a warning)"
        return RULES[rule].severity, ""

    def grade_phrase(self, rule: str, pos: int) -> tuple[str, str]:
        """(severity, a note) of an override or conceal phrase at ``pos``."""
        hidden = self.hidden_at(pos)
        if hidden:
            return "high", f" — {hidden}"
        if self.kind == "markdown":
            s, e = self.line_bounds(pos)
            if self.fence_at(pos) is not None or self.quoted(pos):
                return "low", " (quoted as an example)"
            if self.section_is_about_attacks(pos) or P.TEACHING.search(_EMAIL.sub(b" ", P.URL.sub(b" ", self.low[s:e]))) \
                    or P.NEGATION.search(self.low[s:pos]):
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
        self.check_override()
        self.check_requests()
        self.check_tokens()
        if self.kind == "markdown":
            self.check_comments()
            self.check_link_text()
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
        if self.data.translate(None, P.NOT_CONTROL_BYTES):
            for k, m in enumerate(P.CONTROL.finditer(self.data)):
                if k >= 50:
                    break
                c = m.group()[0]
                what = "a terminal escape sequence" if c == 0x1B else f"a control character (U+{c:04X})"
                self.add("hidden.control", "medium", m.start(), f"{what}: it can hide or rewrite text when printed")
        if self.data.isascii():
            return
        text = self.data.decode("utf-8", "replace")
        t = P.INVISIBLE.search(text)
        if t is None:
            return
        newlines = [nl.start() for nl in re.finditer("\n", text)]
        found: dict[tuple[int, str], _Invisible] = {}
        pos, n = t.start(), 0
        while n < 5000:
            t = P.INVISIBLE.search(text, pos)
            if t is None:
                break
            n += 1
            pos = self._invisible_at(text, t.start(), bisect.bisect_left(newlines, t.start()) + 1, found)
        for (line, rule), inv in found.items():
            self._report_invisible(text, line, rule, inv)

    def _invisible_at(self, text: str, i: int, line: int, found: dict[tuple[int, str], _Invisible]) -> int:
        """Count the invisible character at ``text[i]`` (line ``line``) and the run it starts into
        what is found on its line; returns where to look next."""
        c = ord(text[i])
        j = i + 1

        def note(rule: str, severity: str, kind: str, n: int, extra: str = "") -> None:
            inv = found.setdefault((line, rule), _Invisible(i))
            if RANK[severity] > RANK[inv.severity]:
                inv.severity = severity
            inv.counts[kind] = inv.counts.get(kind, 0) + n
            inv.longest[kind] = max(inv.longest.get(kind, 0), n)
            inv.first.setdefault(kind, c)
            if extra:
                inv.spelled.append(extra)

        if 0xE0000 <= c <= 0xE007F:
            while j < len(text) and 0xE0000 <= ord(text[j]) <= 0xE007F:
                j += 1
            spelled = "".join(chr(ord(ch) - 0xE0000) for ch in text[i:j] if 0x20 <= ord(ch) - 0xE0000 < 0x7F)
            note("hidden.invisible", "high", "tag", j - i, spelled)
        elif 0xE0100 <= c <= 0xE01EF or 0xFE00 <= c <= 0xFE0E:
            while j < len(text) and (0xE0100 <= ord(text[j]) <= 0xE01EF or 0xFE00 <= ord(text[j]) <= 0xFE0E):
                j += 1
            if j - i >= 4:
                note("hidden.invisible", "high", "variation", j - i)
        elif 0x202A <= c <= 0x202E or 0x2066 <= c <= 0x2069 or c == 0x061C:
            ls = text.rfind("\n", max(0, i - WINDOW), i) + 1 or max(0, i - WINDOW)
            le = text.find("\n", i, i + WINDOW)
            le = min(len(text), i + WINDOW) if le < 0 else le
            if not (P.RTL.search(text, ls, le) and self.kind != "script"):
                # right-to-left text uses embeddings to lay out mixed-direction words; an
                # override or an isolate outside such text reorders what is shown
                sev = "high" if self.kind != "markdown" or c in (0x202D, 0x202E) or 0x2066 <= c <= 0x2069 else "medium"
                note("hidden.bidi", sev, "bidi", 1)
        elif 0x80 <= c <= 0x9F:
            note("hidden.control", "medium", "control", 1)
        elif (c == 0xFEFF and i == 0) or c in (0x200E, 0x200F):
            pass      # a byte-order mark; left/right-to-left marks lay out mixed-direction text
        else:
            while j < len(text) and ord(text[j]) in _ZERO_WIDTH:
                j += 1
            if j - i >= 8:
                note("hidden.invisible", "high", "zero-width", j - i)
            elif not P.joins_visibly(text, i, j):
                note("hidden.invisible", "medium", "zero-width", j - i)
        return j

    def _report_invisible(self, text: str, line: int, rule: str, inv: _Invisible) -> None:
        """One finding per line and rule, counting every invisible character of the line."""
        total = sum(inv.counts.values())
        parts = []
        for kind, n in inv.counts.items():
            code = f"U+{inv.first[kind]:04X}"
            if kind == "tag":
                parts.append(f"{n} invisible tag characters spell out: {visible(''.join(inv.spelled), 120)!r}")
            elif kind == "variation":
                parts.append(f"{n} variation selectors: data hidden in invisible characters")
            elif kind == "zero-width":
                parts.append(f"{n} zero-width character{'s' if n > 1 else ''} ({code})"
                             + (f", {inv.longest[kind]} in a row: data can be encoded in them" if inv.longest[kind] >= 8 else
                                " inside the text"))
            elif kind == "bidi":
                parts.append(f"{n} bidirectional control character{'s' if n > 1 else ''} ({code}): the text shown "
                             "is not in the order it is read")
            else:
                parts.append(f"{n} control character{'s' if n > 1 else ''} ({code}): it can hide or rewrite text when "
                             "printed")
        message = "; ".join(parts) if len(parts) == 1 else f"{total} invisible characters on the line: " + "; ".join(parts)
        ls = text.rfind("\n", max(0, inv.at - WINDOW), inv.at) + 1 or max(0, inv.at - WINDOW)
        le = text.find("\n", inv.at, inv.at + WINDOW)
        le = min(len(text), inv.at + WINDOW) if le < 0 else le
        excerpt = text[max(ls, inv.at - 60):le]
        self.add(rule, inv.severity, -1, message, line=line, shown_as=shown(excerpt))
        spelled = "".join(inv.spelled)
        if spelled.strip() and self.depth == 0:
            self.audit_hidden(spelled.encode(), -1, "spelled in invisible tag characters", line=line)

    def check_commands(self) -> None:
        triggers = P.TRIG_COMMANDS + (P.TRIG_DECODE if self.words & _DECODE_WORDS else [])
        for s, e in self.candidates(triggers, "commands that run code"):
            self._fetch_line(s, e) or self._decode_line(s, e)
        for s, e in self.candidates(P.TRIG_SECRETS, "secrets sent out"):
            self._exfil_line(s, e)
        for s, e in self.candidates(P.TRIG_DESTRUCTIVE, "destructive commands"):
            self._destructive_line(s, e)
        for s, e in self.candidates(P.TRIG_REMOTE, "remote access"):
            line = self.low[s:e].replace(b"\\\n", b"  ")
            for rx, what in P.REMOTE_ACCESS:
                m = rx.search(line)
                if m is not None:
                    self._report("exec.remote-access", s + m.start(), s, e, what)
                    break
        for s, e in self.candidates(P.TRIG_UNGUARDED, "agents run without permission checks"):
            m = P.UNGUARDED.search(self.low[s:e])
            if m is not None:
                flag = m.group().decode("utf-8", "replace")
                self._report("tools.unrestricted-shell", s + m.start(), s, e,
                             f"runs an agent with its permission checks off ({flag}): any command runs unasked")

    def _stages(self, s: int, e: int) -> list[tuple[int, bytes]]:
        """The pipeline stages of a logical line, as (offset, lower-cased bytes); ``||`` is not
        a pipe, and a continuation backslash is a space."""
        line = self.low[s:e].replace(b"\\\n", b"  ").replace(b"||", b"\0\0")
        out, off = [], s
        for part in line.split(b"|"):
            out.append((off, part.replace(b"\0\0", b"||")))
            off += len(part) + 1
        return out

    def _report(self, rule: str, at: int, s: int, e: int, message: str) -> bool:
        sev, note = self.grade_command(rule, at, s, e)
        self.add(rule, sev, at, message + note)
        return True

    def _fetch_line(self, s: int, e: int) -> bool:
        line = self.low[s:e].replace(b"\\\n", b"  ")
        stages = self._stages(s, e)
        for k, (off, st) in enumerate(stages[:-1]):
            m = P.FETCH.search(st)
            if m is None:
                continue
            r = P.RUNNER.match(stages[k + 1][1])
            if r is not None:
                runner = (r.group("sh") or r.group("interp") or b"a shell").strip().decode()
                return self._report_fetch(off + m.start(), s, e, P.url_in(st), f"pipes {{url}} into {runner}")
        m = P.RUN_SUBST.search(line) or P.PS_RUN.search(line) or P.CODE_RUN_FETCH.search(line) \
            or P.RUN_FETCHED_ARG.search(line)
        if m is not None:
            return self._report_fetch(s + m.start(), s, e, P.url_in(line[m.start():]), "runs what it downloads from {url}")
        parts = P.COMMAND_SEP.split(line)
        off = 0
        for k, part in enumerate(parts[:-1]):
            if P.FETCH.search(part) and P.DOWNLOAD_OPT.search(part) \
                    and any(P.RUN_FILE.match(p) for p in parts[k + 1:k + 4]):
                return self._report_fetch(s + line.find(part), s, e, P.url_in(part), "downloads {url} and runs the file")
        return False

    def _report_fetch(self, at: int, s: int, e: int, url: str, message: str) -> bool:
        sev, note = self.grade_command("exec.fetch-and-run", at, s, e)
        if sev == "high" and not self.hidden_at(at) and P.known_installer(url):
            sev, note = "medium", " (the documented installer of a well-known tool, over HTTPS)"
        self.add("exec.fetch-and-run", sev, at, message.format(url=url) + note)
        return True

    def _decode_line(self, s: int, e: int) -> bool:
        line = self.low[s:e].replace(b"\\\n", b"  ")
        stages = self._stages(s, e)
        for k, (off, st) in enumerate(stages[:-1]):
            m = P.DECODE.search(st)
            if m is not None and P.RUNNER.match(stages[k + 1][1]):
                return self._report("exec.decode-and-run", off + m.start(), s, e,
                                    "decodes an encoded payload and pipes it into a shell or an interpreter")
        m = P.CODE_RUN_DECODE.search(line) or P.CODE_RUN_DECODE_MORE.search(line) or P.RUN_DECODED_ARG.search(line)
        if m is not None:
            return self._report("exec.decode-and-run", s + m.start(), s, e, "runs code decoded from an encoded string")
        m = P.PS_ENCODED.search(line)
        if m is not None:
            return self._report("exec.decode-and-run", s + m.start(), s, e, "runs an encoded PowerShell command")
        m = P.SUBST_DECODE_RUN.search(line)
        if m is not None and P.DECODE.search(line, m.end()):
            return self._report("exec.decode-and-run", s + m.start(), s, e, "runs the output of a decoded payload")
        if (b"iex" in line or b"invoke-expression" in line) and b"frombase64string" in line:
            return self._report("exec.decode-and-run", s + line.find(b"frombase64string"), s, e,
                                "runs a command decoded from base64 (PowerShell)")
        return False

    def _exfil_line(self, s: int, e: int) -> None:
        stages = self._stages(s, e)
        for k, (off, st) in enumerate(stages):
            src = P.secret_in(st)
            if src is None:
                continue
            spos, what = src
            for _, later in stages[k + 1:k + 6]:      # piped into a later stage that sends
                sink = P.SINK.search(later)
                if sink is not None:
                    self._report("exfil.secrets", off + spos, s, e, f"sends {what} out ({P.sink_name(sink)})")
                    return
            for sink in P.SINK.finditer(st, 0, spos):   # an argument of a command that sends
                between = st[sink.end():spos]
                name = sink.group("cmd") or b""
                if P.IDENTITY.search(between):
                    continue
                if name in P.SENDS_ANY_ARG or P.UPLOAD_MARK.search(between) or st.startswith((b"$(", b"`"), spos):
                    self._report("exfil.secrets", off + spos, s, e, f"sends {what} out ({P.sink_name(sink)})")
                    return

    def _destructive_line(self, s: int, e: int) -> None:
        line = self.low[s:e].replace(b"\\\n", b"  ")
        for rx, what in P.DESTRUCTIVE:
            m = rx.search(line)
            if m is not None:
                target = (m.groupdict().get("t") or b"").decode("utf-8", "replace")
                self._report("destructive.command", s + m.start(), s, e, what.format(t=target))
                return

    def check_flows(self) -> None:
        """Across the lines of a script or a code block: a download saved to a file that is then
        run, and a value decoded or fetched into a variable that is then run."""
        if not self.words & _FLOW_WORDS:
            return
        regions = self.fences if self.kind == "markdown" else [(0, len(self.data))]
        if not regions:
            return
        hints = {h for w, h in _FLOW_HINTS.items() if w in self.words}
        budget = MAX_LINES_PER_RULE
        for rs, re_ in regions[:MAX_MARKS]:
            if budget <= 0:
                break
            first = min((i for i in (self.low.find(h, rs, re_) for h in hints) if i >= 0), default=-1)
            if first < 0:
                continue          # nothing fetched or decoded in this block
            budget -= self._flow(self.low.rfind(b"\n", rs, first) + 1 or rs, re_, budget)

    def _flow(self, rs: int, re_: int, budget: int) -> int:
        downloads: dict[bytes, list] = {}     # target -> [offset, url, verified]
        values: dict[bytes, tuple[str, int]] = {}   # name -> ('decode' | 'fetch', offset)
        pos, n = rs, 0
        while pos < re_ and n < budget:
            end = self.low.find(b"\n", pos, re_)
            end = re_ if end < 0 else end
            n += 1
            line = _BRACED.sub(rb"$\1", self.low[pos:min(end, pos + MAX_LOGICAL_LINE)])
            if b"[" in line and b"," in line:      # ['curl', '-o', path, url]: read as the command it runs
                line = _LIST_ARGS.sub(b" ", line)
            self._flow_line(pos, line, downloads, values)
            pos = end + 1
        return n

    def _flow_line(self, at: int, line: bytes, downloads: dict[bytes, list], values: dict[bytes, tuple[str, int]]) -> None:
        self._runs_of_downloads(at, line, downloads)
        before = len(downloads)
        self._flow_values(at, line, downloads, values)
        if len(downloads) > before or any(d[0] == at for d in downloads.values()):
            self._runs_of_downloads(at, line, downloads, same_line=True)

    def _runs_of_downloads(self, at: int, line: bytes, downloads: dict[bytes, list], same_line: bool = False) -> None:
        """A file that a download (or a decode) saved, run on this line."""
        for target, (dpos, url, verified) in list(downloads.items()):
            if same_line and dpos != at:
                continue
            k = line.find(target)
            while 0 <= k:
                after = line[k + len(target):k + len(target) + 1]
                if after in (b"", b" ", b"\t", b";", b"&", b"|", b")", b"]", b"'", b'"', b",") \
                        and _RUN_PATH_END.search(line, 0, k):
                    url_note = url if url != "a download" else "a file"
                    if url == "a decoded payload":
                        self._report("exec.decode-and-run", dpos, *self.line_bounds(dpos),
                                     f"decodes a payload to a file and runs it (line {self.line_of(at)})")
                    elif verified:
                        self.add("exec.fetch-and-run", "medium", dpos, f"downloads {url_note} and runs it later "
                                 f"(line {self.line_of(at)}); its checksum or signature is checked first")
                    else:
                        self._report_fetch(dpos, *self.line_bounds(dpos), url,
                                           "downloads {url} to a file and runs it " + f"(line {self.line_of(at)})")
                    del downloads[target]
                    break
                k = line.find(target, k + 1)

    def _flow_values(self, at: int, line: bytes, downloads: dict[bytes, list], values: dict[bytes, tuple[str, int]]) -> None:
        # a download to a file
        if P.FETCH.search(line) or b"urlretrieve" in line or b"downloadfile" in line or P.DECODE.search(line):
            for rx in P.DOWNLOAD_TO:
                m = rx.search(line)
                if m is None:
                    continue
                if m.groupdict().get("t"):
                    target = m.group("t").strip(b"\"'")
                    if b"://" in target:      # curl -O URL (lower-cased like -o): saved under its last part
                        target = target.rstrip(b"/").rsplit(b"/", 1)[-1].split(b"?")[0]
                else:
                    u = P.URL.search(line)
                    target = u.group().rstrip(b"/\"'").rsplit(b"/", 1)[-1] if u else b""
                if len(target) >= 2 and target not in (b"/dev/null", b"-", b"/dev/stdout", b"/dev/stderr"):
                    downloads[target] = [at, P.url_in(line) if P.FETCH.search(line) else "a decoded payload", False]
                    if len(downloads) > 50:
                        downloads.pop(next(iter(downloads)))
                break
        elif downloads and P.CHECKSUM.search(line):
            for target, d in downloads.items():
                base = target.rsplit(b"/", 1)[-1]
                if base in line or target in line or b"-c" in line or b"--check" in line:
                    d[2] = True
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
                downloads[target] = [vpos, P.url_in(self.low[vpos:vpos + 2000]), False]
        # a value decoded or fetched, passed on, or run
        a = P.ASSIGN_LINE.match(line)
        if a is not None:
            name, rhs = a.group("n"), a.group("rhs")
            src = ("decode" if P.DECODED_VALUE.search(rhs) else "fetch" if P.FETCHED_VALUE.search(rhs) else None)
            if src is None:
                for w in P.WORD.findall(rhs, 0, 2000):
                    if w in values and w != name:
                        src = values[w][0]
                        break
            if src is not None and len(values) < 200:
                values[name] = (src, at)
            elif name in values and src is None:
                del values[name]
        if values:
            for m in P.RUN_VALUE.finditer(line):
                name = next(g for g in m.groups() if g is not None)
                if name in values:
                    src, vpos = values[name]
                    if src == "decode":
                        self._report("exec.decode-and-run", at + m.start(), at, at + len(line),
                                     f"runs a value decoded from an encoded string (line {self.line_of(vpos)})")
                    else:
                        self._report_fetch(at + m.start(), at, at + len(line), P.url_in(self.low[vpos:vpos + 2000]),
                                           "runs what it downloads from {url} " + f"(line {self.line_of(vpos)})")
                    break

    def check_requests(self) -> None:
        """A request in words to send secrets or files to a URL, and to reveal the agent's
        instructions or the environment."""
        seen: set[int] = set()
        places: list[re.Match] = []
        for rx, keys in zip(P.DESTINATIONS, _DESTINATION_WORDS):
            if self.words.isdisjoint(keys) and not (keys == (b"@",) and self.has(b"@")):
                continue
            for m in rx.finditer(self.low):
                if len(places) >= MAX_LINES_PER_RULE:
                    break
                i = m.start()
                if rx.pattern.startswith((b"server", b"endpoint", b"collector")) \
                        and not P.OWNED_PLACE.search(self.low, max(0, i - 40), i):
                    continue
                if rx.pattern.startswith(b"@") and not (i and self.low[i - 1:i].isalnum()):
                    continue
                places.append(m)
        places.sort(key=lambda m: m.start())
        last = -1
        for m in places:
            if m.start() < last:
                continue          # in the sentence looked at already
            a, b = self._sentence(m.start(), m.end())
            last = b
            if a in seen:
                continue
            seen.add(a)
            sent = self.low[a:b]
            if not any(h in sent for h in _SECRET_HINTS):
                continue
            hit = P.EXFIL_VERB_FIRST.search(sent) or P.EXFIL_OBJECT_FIRST.search(sent) or P.EXFIL_PUBLISH.search(sent)
            if hit is None:
                continue
            if P.AUTH_USE.search(sent) and P.KEY_OBJECT.search(hit.group()) and not P.SECRET_PATH.search(hit.group()):
                continue      # a key sent to its own API, in a header
            at = a + hit.start()
            if (self.kind == "markdown" and self.fence_at(at) is not None) or ("exfil.secrets", self.line_of(at)) in self._seen:
                continue      # a command, not a request in words: the command rules read it
            sev, note = self.grade_phrase("exfil.request", at)
            if self.kind != "markdown" and not self.hidden_at(at):
                sev = "medium"
            self.add("exfil.request", sev, at, f"{RULES['exfil.request'].title}: "
                     f"{visible(self.data[at:a + hit.end()].decode('utf-8', 'replace'), 100)!r} "
                     f"to {visible(m.group().decode('utf-8', 'replace'), 80)}{note}")
        if self.words & _PUBLISH_WORDS:
            for s, e in self.candidates(P.TRIG_PUBLISH, "secrets published"):
                hit = P.EXFIL_PUBLISH.search(self.low, s, e)
                if hit is not None:
                    at = hit.start()
                    sev, note = self.grade_phrase("exfil.request", at)
                    if self.kind != "markdown" and not self.hidden_at(at):
                        sev = "medium"
                    self.add("exfil.request", sev, at, f"{RULES['exfil.request'].title}: "
                             f"{self._shown(at, hit.group())!r} (published where anyone with the link reads it){note}")
        if not self.words & _DISCLOSE_WORDS:
            return
        for s, e in self.candidates(P.TRIG_DISCLOSE, "requests to reveal secrets"):
            for m in P.DISCLOSE.finditer(self.low, s, e):
                at = m.start()
                sev, note = self.grade_phrase("override.disclose", at)
                self.add("override.disclose", sev, at, f"{RULES['override.disclose'].title}: "
                         f"{self._shown(at, m.group())!r}{note}")
                break

    def _sentence(self, s: int, e: int) -> tuple[int, int]:
        """The sentence around ``s``..``e``: it ends at a full stop, a blank line, a list item or
        a heading, and at most 400 bytes either side."""
        lo, hi = max(0, s - 400), min(len(self.low), e + 400)
        a = lo
        for b in _SENTENCE_BREAK.finditer(self.low, lo, s):
            a = b.start() + 1
        m = _SENTENCE_BREAK.search(self.low, e, hi)
        return a, (m.start() + 1 if m else hi)

    def check_tokens(self) -> None:
        """A credential in a known format; high when something nearby pushes or posts with it."""
        # every token has a run of 20 letters and digits (a private key's lines too): one look at
        # the text's shape says whether any can be there
        words = self.words
        if self.shape.find(b"a" * 20) < 0 or not words & _TOKEN_WORDS and not any(
                w.startswith(_TOKEN_STARTS) for w in words if len(w) >= 16):
            return
        long_words = [w for w in words if len(w) >= 16]
        found = [m for hints, rx in P.TOKENS
                 if any(h in words if not h.startswith(b"^") else any(w.startswith(h[1:]) for w in long_words)
                        for h in hints)
                 for m in itertools.islice(rx.finditer(self.data), 20)]
        for m in sorted(found, key=lambda m: m.start())[:50]:
            tok = m.group()
            if tok.startswith(b"-----"):
                if P.PRIVATE_KEY_BODY.match(self.data, m.end(), m.end() + 6000) is None:
                    continue      # a header with no key under it: an example of the format
            else:
                body = tok.rsplit(b"/", 1)[-1]
                if P.PLACEHOLDER.search(body.lower()) or len(set(body)) < 12 \
                        or not any(48 <= c <= 57 for c in body) or (tok.startswith(b":") and not
                                                                     self.data[max(0, m.start() - 10):m.start()].isdigit()):
                    continue      # an example, a placeholder, or not a Telegram token
            name = next((n for pre, n in P.TOKEN_NAMES if tok.lower().startswith(pre.encode())), "a token")
            at = m.start()
            ls, le = self.line_bounds(at)
            ws, we = ls, le
            if tok.startswith(b"-----"):
                end = self.data.find(b"-----end", m.end(), m.end() + 20_000) if False else \
                    self.low.find(b"-----end", m.end(), m.end() + 20_000)
                if end > 0:
                    we = self.line_bounds(end)[1]
            for _ in range(8):
                if ws > 0:
                    ws = self.line_bounds(ws - 1)[0]
                if we < len(self.data):
                    we = self.line_bounds(we + 1)[1]
            push = P.PUSH.search(self.low, ws, we)
            sev, note = ("high", "") if push else ("medium", "")
            if self.hidden_at(at):
                sev, note = "high", f" — {self.hidden_at(at)}"
            elif self.kind == "markdown" and (self.near_negation(at, ls, le) or self.section_is_about_attacks(at)):
                sev, note = "low", " (shown as an example or a warning)"
            what = push.group().decode("utf-8", "replace").strip(" (:") if push else ""
            line = self.data[max(ls, at - 80):min(le, m.end() + 80)].replace(tok, tok[:8] + b"<redacted>")
            self.add("secrets.hardcoded", sev, at, f"{name} written into the skill"
                     + (f", used to push or post ({what})" if push else "") + note, excerpt=line)

    def check_link_text(self) -> None:
        for s, e, what in self.linktext:
            if any(s <= p < e for p in self._found_at):
                continue          # what is hidden there is reported (high) by its own rule
            body = self.low[s:e]
            if len(body.split(None, 6)) >= 6 and P.ADDRESSES_AGENT.search(body) \
                    and len(P.INSTRUCTION_LIKE.findall(body, 0, 4000)) >= 2:
                self.add("hidden.link-text", self._hidden_severity(s, e), s,
                         f"{what} that reads like instructions: the agent reads it, a reader of the rendered skill "
                         "does not", excerpt=self.data[s:min(e, s + 300)])

    def check_view(self) -> None:
        """Run the rules again on the text as a model reads it (invisible characters removed, bidi
        controls dropped, entities decoded, fullwidth letters folded, shell variables filled in);
        what is found there and not in the raw text is reported on its line, high where invisible
        characters were hiding it."""
        view, stripped = model_view(self.data, self.low, bool(self.words & _FETCH_WORDS))
        if view == self.data:
            return
        # only the lines that changed and those near them are read again (and every heading and
        # fence line, which decide how a match is graded)
        old, new = self.data.split(b"\n"), view.split(b"\n")
        changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
        near: set[int] = set()
        for i in changed[:MAX_LINES_PER_RULE]:
            near.update(range(max(0, i - 15), i + 16))
        view = b"\n".join(ln if (i in near or ln.lstrip()[:1] in (b"#", b"`", b"~")) else b""
                          for i, ln in enumerate(new))
        inner = Scan(view, self.file, self.kind, self.security_topic, depth=1)
        raw_lines = None
        for f in inner.run():
            if (f.rule, f.line) in self._seen or f.line <= 0:
                continue
            if raw_lines is None:
                raw_lines = self.data.split(b"\n")
            raw = raw_lines[f.line - 1] if f.line <= len(raw_lines) else b""
            sev, message = f.severity, f.message
            if f.line in stripped:
                sev, message = "high", f"{message} — once the invisible characters on this line are removed"
            elif f.line <= len(raw_lines) and b"$" in raw:
                message = f"{message} (with the file's shell variables filled in)"
            self.add(f.rule, sev, -1, message, line=f.line, excerpt=raw[:EXCERPT_BYTES])

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
                        # what is kept back is named in the phrase, after it, or earlier in its sentence
                        begin = self._sentence(at, at)[0] if at - s < 200 else at
                        if not P.CONCEAL_ACTION.search(self.low, max(begin, at - 200), min(stop) if stop else end + 60):
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
        inner.check_override()
        inner.check_requests()
        inner.check_tokens()
        line = line if line is not None else self.line_of(pos)
        found = inner.finish()
        for f in found:
            self.add(f.rule, "high", pos, f.message, excerpt=f"{why}: {f.excerpt}", line=line)
        return found


_SHAPE = bytes(0x61 if (0x30 <= i <= 0x39 or 0x41 <= i <= 0x5A or 0x61 <= i <= 0x7A or i in (0x2B, 0x2F))
               else 0x20 if i in (0x20, 0x09) else 0x2E for i in range(256))
_ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD, 0x2061, 0x2062, 0x2063, 0x2064}
_BRACED = re.compile(rb"\$\{([a-z_][a-z0-9_]{0,40})\}")
_RUN_PATH_END = re.compile(b"(?:" + P.RUN_PATH.pattern + rb")[\"']?$")
_EMAIL = re.compile(rb"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}")
_LIST_ARGS = re.compile(rb"['\"]\s{0,3},\s{0,3}['\"]?|\[\s{0,3}['\"]|['\"]\s{0,3}\]|,\s{0,3}")
_SENTENCE_BREAK = re.compile(rb"[.!?;][ \n]|\n(?=[\n\-*#|`])")


class _Invisible:
    """What one line holds of one kind of finding about invisible characters."""

    def __init__(self, at: int):
        self.at = at                       # the first one, in the decoded text
        self.severity = "low"
        self.counts: dict[str, int] = {}
        self.first: dict[str, int] = {}
        self.longest: dict[str, int] = {}
        self.spelled: list[str] = []


def shown(text: str, limit: int = 600) -> str:
    """``text`` on one line with every invisible, bidi or control character shown as
    ``<U+200B>`` and a run of four or more of one as ``<U+200B×43>``, at most ``limit`` characters."""
    out: list[str] = []
    n = 0
    for ch, run in itertools.groupby(text):
        k = sum(1 for _ in run)
        if ch in " \t\r\n":
            rep = " "
        else:
            rep = visible(ch, 20)
            if rep.startswith("<U+") and k >= 4:
                rep = f"{rep[:-1]}×{k}>"
            else:
                rep *= k
        out.append(rep)
        n += len(rep)
        if n >= limit:
            break
    s = " ".join("".join(out).split())
    return s if n < limit else s[:limit] + "…"


def model_view(data: bytes, low: bytes, fetches: bool) -> tuple[bytes, set[int]]:
    """The text as a model reads it, line for line, and the lines that lost invisible characters:
    zero-width, tag and variation-selector characters and bidi controls removed, HTML entities
    decoded (where that adds no line), fullwidth letters folded to ASCII, and shell variables
    set to plain values in the file filled in where they are used."""
    stripped: set[int] = set()
    if not data.isascii() and P.VIEW_CHANGES.search(data):
        text = data.decode("utf-8", "replace")
        lines = text.split("\n")
        for i, ln in enumerate(lines):
            if not ln.isascii():
                new = ln.translate(P.STRIP_FROM_VIEW)
                if new != ln:
                    stripped.add(i + 1)
                lines[i] = new.translate(_FULLWIDTH)
        data = "\n".join(lines).encode("utf-8", "surrogatepass")
    if b"&#" in data:
        text = data.decode("utf-8", "replace")
        decoded = P.ENTITY.sub(lambda m: html.unescape(m.group()), text)
        if decoded.count("\n") == text.count("\n"):
            data = decoded.encode("utf-8", "surrogatepass")
    if fetches and b"$" in data and b"=" in data:
        values: dict[bytes, bytes] = {}
        for k, m in enumerate(P.SHELL_ASSIGN.finditer(data)):
            if k >= 200:
                break
            values[m.group("n")] = m.group("v").strip(b"\"'")
        if values:
            def fill(m: re.Match) -> bytes:
                return values.get(m.group("b") or m.group("p"), m.group())
            data = P.SHELL_USE.sub(fill, data)
    return data, stripped


_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_WORD_BYTES = bytes(c if (48 <= c <= 57 or 97 <= c <= 122) else 32 for c in range(256))
_FETCH_WORDS = frozenset((b"curl", b"wget", b"webrequest", b"urlretrieve", b"urlopen", b"iwr", b"irm"))
_FLOW_WORDS = frozenset((b"curl", b"wget", b"decode", b"b64decode", b"base64", b"fromhex", b"unhexlify", b"hex", b"atob",
                         b"rot13", b"chr", b"urlretrieve", b"requests", b"urlopen", b"fetch", b"iwr", b"irm", b"invoke",
                         b"httpx", b"axios", b"uri", b"http", b"contents", b"downloadstring", b"xxd", b"decode64",
                         b"b32decode", b"decodebytes", b"frombase64string", b"buffer", b"https"))
_DISCLOSE_WORDS = frozenset((b"prompt", b"instructions", b"rules", b"configuration", b"environment", b"env", b"keys",
                             b"secrets", b"credentials", b"tokens", b"passwords", b"context"))
_DESTINATION_WORDS = ((b"http", b"https"), (b"webhook", b"webhooks"), (b"@",), (b"server",), (b"endpoint",))
_CONCEAL_WORDS = frozenset((b"not", b"t", b"never", b"need", b"without", b"keep", b"silently", b"quietly", b"secretly",
                            b"omit", b"leave", b"exclude", b"stay", b"say", b"remain"))
_PUBLISH_WORDS = frozenset((b"gist", b"paste", b"pastebin", b"issue", b"comment", b"discussion"))
_DECODE_WORDS = frozenset((b"atob", b"decode_base64", b"b64decode", b"decode64", b"decode", b"fromhex", b"unhexlify", b"codecs", b"buffer",
                           b"frombase64string"))
_TOKEN_WORDS = frozenset((b"ghp", b"gho", b"ghu", b"ghs", b"ghr", b"github", b"xoxb", b"xoxp", b"xoxa", b"xoxo", b"xoxs",
                          b"xoxr", b"sk", b"rk", b"glpat", b"npm", b"hf", b"slack", b"webhooks", b"private"))
_TOKEN_STARTS = (b"akia", b"asia", b"aiza", b"aa")
_SECRET_HINTS = (b"credential", b"key", b"token", b"secret", b"password", b"env", b"cookie",
                 b"keychain", b"wallet", b"seed", b"history", b"home", b"dotfile", b"/etc/", b".ssh", b".aws", b"id_",
                 b".netrc", b".npmrc", b".pypirc", b".gnupg", b".kube", b"kubeconfig", b".config/", b".docker",
                 b".password-store", b"ssh", b"passwd", b"shadow")
# a word of the text -> what to look for where a code block might start to matter
_FLOW_HINTS = {w: w for w in (b"curl", b"wget", b"decode", b"base64", b"hex", b"atob", b"rot13", b"urlretrieve",
                              b"requests", b"urlopen", b"fetch", b"iwr", b"irm", b"invoke", b"httpx", b"axios", b"xxd",
                              b"downloadstring", b"buffer")}
_FLOW_HINTS.update({b"b64decode": b"decode", b"decode64": b"decode", b"b32decode": b"decode", b"decodebytes": b"decode",
                    b"fromhex": b"hex", b"unhexlify": b"hex", b"frombase64string": b"base64", b"chr": b"chr(",
                    b"uri": b"open-uri", b"http": b"http", b"https": b"https", b"contents": b"file_get_contents"})
