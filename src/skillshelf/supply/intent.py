"""A small model of intent over sentences: what a sentence asks of the agent, read from the kinds
of words it joins rather than from fixed phrases. Part of the audit of one file
(``skillshelf.supply.scan``), which also runs it on the text as a model reads it.

Four intents, each a combination of concepts in one sentence:

- **exfiltration**: something secret (a key, a credentials file, the environment, a home folder)
  + a way of sending (send, post, paste, include, upload… in several languages) + an outside
  destination after it (a URL, a host variable, a webhook, an address, a collector). The secret
  is not an instrument ("using the token in $GITHUB_TOKEN") and the destination is not a source
  ("copy it from https://…").
- **concealment**: keeping something from the user (hide, omit, leave out, not tell, shouldn't
  know, without telling…) or reporting success whatever happened; high when what is kept back
  is a step of the agent's (a command, a script, a hook, an upload, a change).
- **override**: a verb that sets instructions aside + the agent's instructions (instructions,
  rules, system prompt…) + a word saying whose (previous, given, above, system, your…).
- **disclosure**: a verb that shows + the agent's instructions or the whole environment.

A sentence that negates the concealing verb ("never hide anything from the user"), or one in a
passage about attacks, is graded low by the file's own context rules (``Scan.grade_phrase``)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from . import context, patterns as P
from .intent_words import (
    _BREAK,
    _CONCEAL_ANCHORS,
    _CONCEAL_WORDS,
    _DECEIVE_WORDS,
    _DIRECTIVE_WORDS,
    _EXFIL_WORDS,
    _FILE_LIKE,
    _FORM_WORDS,
    _REVEAL_WORDS,
    _SECRET_WORDS,
    _SEND_WORDS,
    _SET_ASIDE_WORDS,
    _SHOW_WORDS,
    _WEAK_SEND_WORDS,
    _WORD_BYTES,
    CODE_STEP,
    CONCEAL_FORMS,
    DECEIVE,
    DEST,
    DIRECTIVE,
    IGNORE,
    INSTRUMENT,
    INTO,
    KEPT_IN,
    LOCAL,
    NEGATED,
    NOUN_BEFORE,
    PLACE,
    PRIOR,
    PRIVATE,
    PROBLEMS,
    REFERENCE_BEFORE,
    REMOVED,
    REVEAL,
    SECRET,
    SECRET_SOURCE,
    SEND,
    SOURCE_BEFORE,
    STEP,
    VOID,
    WEAK_SEND,
    editorial,
)
from .rules import RANK, RULES, visible
from .scopes import destination

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_ANCHORS = 400          # sentences read in one file, per intent (holding the words it needs)
MAX_LOOKED = 10_000        # sentences looked at in one file, per intent

def sentence(low: bytes, s: int, e: int) -> tuple[int, int]:
    """The sentence around ``s``..``e``: it ends at a full stop, a blank line, a list item, a
    heading, a table row, a fence or where a link's text ends, and at most 400 bytes either side."""
    lo, hi = max(0, s - 400), min(len(low), e + 400)
    return _Sentences(low[lo:hi]).around(s - lo, e - lo, lo)


class _Sentences:
    """Where the sentences of a text begin, found in one pass."""

    def __init__(self, low: bytes):
        self.n = len(low)
        self.starts = [0] + [m.start() + (2 if m.group() == b"](" else 1) for m in _BREAK.finditer(low)]

    def around(self, s: int, e: int, offset: int = 0) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, s) - 1
        a = max(self.starts[i], s - 400, 0)
        j = bisect.bisect_right(self.starts, e)
        b = min(self.starts[j] if j < len(self.starts) else self.n, e + 400, self.n)
        return a + offset, b + offset


def _sentences(scan: Scan) -> _Sentences:
    got = scan.__dict__.get("_intent_sentences")
    if got is None:
        got = scan.__dict__["_intent_sentences"] = _Sentences(scan.low)
    return got


def _next_hit(low: bytes, w: bytes, i: int) -> int:
    """Where ``w`` is next a whole word of ``low`` at or after ``i``, or -1."""
    i = low.find(w, i)
    while i >= 0:
        j = i + len(w)
        if (i == 0 or not low[i - 1:i].isalnum()) and not low[j:j + 1].isalnum():
            return i
        i = low.find(w, j)
    return -1


def _anchors(scan: Scan, words: frozenset[bytes], what: str,
             gate: Callable[[bytes], bool]) -> Iterator[tuple[int, int, int]]:
    """(anchor offset, sentence start, sentence end) for each sentence holding one of ``words``
    (whole words of the lower-cased text, found with ``bytes.find``), once each, in order, that
    passes ``gate`` (the words an intent needs). At most ``MAX_ANCHORS`` sentences pass, and
    ``MAX_LOOKED`` are looked at; past either, a ``files.not-audited`` finding says the rest was not read."""
    low = scan.low
    sentences = _sentences(scan)
    at = {w: _next_hit(low, w, 0) for w in words & scan.words}
    at = {w: i for w, i in at.items() if i >= 0}
    seen: set[int] = set()
    read = 0
    end = -1
    while at:
        w = min(at, key=at.__getitem__)
        i = at[w]
        if i < end:
            for v in [v for v, j in at.items() if j < end]:   # inside the sentence just looked at: go on after it
                j = _next_hit(low, v, end)
                if j < 0:
                    del at[v]
                else:
                    at[v] = j
            continue
        a, b = sentences.around(i, i + 1)
        if a not in seen:
            seen.add(a)
            end = b
            needed = gate(low[a:b])
            if len(seen) > MAX_LOOKED or (needed and read >= MAX_ANCHORS):
                scan.add("files.not-audited", "medium", i, f"more than {min(read, len(seen) - 1):,} sentences to "
                         f"read for {what}: the rest of the file was not read for it")
                return
            if needed:
                read += 1
                yield i, a, b
        j = _next_hit(low, w, i + len(w))
        if j < 0:
            del at[w]
        else:
            at[w] = j


def _may_send(sent: bytes) -> bool:
    w = _words(sent)
    return not ((w.isdisjoint(_SEND_WORDS) and w.isdisjoint(_WEAK_SEND_WORDS))
                or (w.isdisjoint(_EXFIL_WORDS) and b"@" not in sent and b"$" not in sent))


def _has(words: frozenset[bytes]) -> Callable[[bytes], bool]:
    return lambda sent: not _words(sent).isdisjoint(words)


def _words(sent: bytes) -> set[bytes]:
    return set(sent.translate(_WORD_BYTES).split())


class _Sentence:
    """What ``exfiltration`` looks up in one sentence, each pattern run once over it: the ways
    of sending, the weak verbs, the places ("to", "into" …) and the destinations, with what each
    destination needs to know about its surroundings. Each secret then costs a few look-ups, not a
    pass over the sentence per verb and destination."""

    MAX_RESCANS = 16      # destinations looked for again from inside one (see ``dests_from``)

    def __init__(self, sent: bytes):
        self.sent = sent
        self.sends = [(v.start(), v.end()) for v in SEND.finditer(sent)
                      if not NOUN_BEFORE.search(sent, max(0, v.start() - 20), v.start())]
        self.send_starts = [s for s, _ in self.sends]
        self.weak = [(v.start(), v.end()) for v in WEAK_SEND.finditer(sent)]
        self.weak_starts = [s for s, _ in self.weak]
        self.weak_ends = [e for _, e in self.weak]
        places = list(PLACE.finditer(sent))
        self.place_starts = [p.start() for p in places]
        self.place_ends = [p.end() for p in places]
        self.place_words = [p.start() + len(p.group().rstrip()) for p in places]
        self.dests = [(d.start(), d.end()) for d in DEST.finditer(sent)]
        self.dest_starts = [s for s, _ in self.dests]
        self._props: dict[tuple[int, int], tuple[bool, int, int, bool]] = {}
        self._heads: dict[int, tuple[list[tuple[int, int]], int]] = {}
        self._auth: bool | None = None
        # the destinations no source or local test rules out, and those a weak verb may reach
        self.ok = [i for i, d in enumerate(self.dests) if not self.props(*d)[0]]
        self.ok_starts = [self.dests[i][0] for i in self.ok]
        self.placed = [i for i in self.ok if self.props(*self.dests[i])[2] >= 0]
        self.web = [i for i, d in enumerate(self.dests) if self.props(*d)[3]]

    def auth_use(self) -> bool:
        if self._auth is None:
            self._auth = P.AUTH_USE.search(self.sent) is not None
        return self._auth

    def props(self, s: int, e: int) -> tuple[bool, int, int, bool]:
        """Of the destination at s..e: (where something comes from, or this machine; lo, hi: a weak
        verb ending in lo < end <= hi names first a place ("drop it into …") at most 25 bytes before
        it, -1, -1 when none does; an outside web address not given as a reference). "add .env to
        .gitignore before the push to https://…" names .gitignore first."""
        got = self._props.get((s, e))
        if got is None:
            sent, text = self.sent, self.sent[s:e]
            bad = SOURCE_BEFORE.search(sent, max(0, s - 40), s) is not None or LOCAL.match(text) is not None
            # the places whose word ends by ``s`` and which end at most 25 bytes before it
            last = bisect.bisect_right(self.place_words, s) - 1
            near = bisect.bisect_left(self.place_ends, s - 25)
            lo = hi = -1
            if near <= last:
                lo, hi = (self.place_starts[near - 1] if near > 0 else -1), self.place_starts[last]
            web = text.startswith((b"http", b"ws", b"ftp", b"sftp")) and LOCAL.match(text) is None \
                and REFERENCE_BEFORE.search(sent, max(0, s - 40), s) is None
            got = self._props[(s, e)] = (bad, lo, hi, web)
        return got

    def weak_reaches(self, lo: int, hi: int, wlo: int, whi: int) -> bool:
        """Whether one of the weak verbs ``wlo``..``whi`` ends in lo < end <= hi."""
        k = bisect.bisect_right(self.weak_ends, lo, wlo, whi)
        return k < whi and self.weak_ends[k] <= hi

    def dests_from(self, pos: int) -> tuple[list[tuple[int, int]], int]:
        """The destinations ``DEST.finditer(sent, pos)`` finds: a few of its own (when ``pos`` is
        inside a destination found from the start) and then those found from the start, from an index."""
        i = bisect.bisect_left(self.dest_starts, pos)
        if i == 0 or self.dests[i - 1][1] <= pos:
            return [], i
        got = self._heads.get(pos)
        if got is None:
            head: list[tuple[int, int]] = []
            j = len(self.dests)
            if len(self._heads) < self.MAX_RESCANS:
                for d in DEST.finditer(self.sent, pos):
                    j = bisect.bisect_left(self.dest_starts, d.start())
                    if j < len(self.dests) and self.dest_starts[j] == d.start():
                        break         # the same match as from the start: the same ones after it
                    head.append((d.start(), d.end()))
                    j = len(self.dests)
            else:
                j = i                 # past the cap, the ones found from the start
            got = self._heads[pos] = (head, j)
        return got


def exfiltration(sent: bytes) -> tuple[int, int, bytes] | None:
    """(start, end, the destination) of a request in ``sent`` to send a secret out, or None."""
    w = _words(sent)
    if (w.isdisjoint(_SEND_WORDS) and w.isdisjoint(_WEAK_SEND_WORDS)) or (w.isdisjoint(_EXFIL_WORDS) and b"@" not in sent and b"$" not in sent):
        return None
    if b"\\\n" in sent:
        return None           # a command continued over lines: the command rules read it
    t: _Sentence | None = None
    for sec in SECRET.finditer(sent):
        if sec.group().rstrip(b".,;:)'\"`").endswith(b".pub") or re.match(rb"\S{0,40}\.pub\b", sent[sec.end():sec.end() + 40]):
            continue          # a public key
        if sec.start() and sent[sec.start() - 1:sec.start()] in (b"/", b"-", b"_") and sec.group()[:1] not in b".~$":
            continue          # part of a path or a name (/forgot-password), not a secret
        if INSTRUMENT.search(sent, max(0, sec.start() - 60), sec.start()) \
                or INTO.search(sent, max(0, sec.start() - 30), sec.start()) \
                or REMOVED.search(sent, max(0, sec.start() - 60), sec.start()):
            continue          # what authenticates, where something is put, or what is taken out first
        if KEPT_IN.search(sent, max(0, sec.start() - 40), sec.start()) and SECRET_SOURCE.search(sec.group()) is None:
            continue          # a secret store a value is read from ("the webhook stored in Jenkins credentials")
        if sec.group().endswith(b"environment") and re.match(rb"\s+variable\b(?!s)", sent[sec.end():sec.end() + 12]) \
                and not re.search(rb"\b(?:every|each|all|any)\s+$", sent[max(0, sec.start() - 12):sec.start()]):
            continue      # where one named value is kept, not the whole environment
        if t is None:
            t = _Sentence(sent)
        source = SECRET_SOURCE.search(sec.group()) is not None
        if t.auth_use() and not source and P.KEY_OBJECT.search(sec.group()):
            continue          # a key sent to its own API, in a header
        # a way of sending near the secret (before it, or after it: "read X and post it to …")
        s0, s1 = sec.start() - 240, sec.start() + 240
        slo, shi = bisect.bisect_left(t.send_starts, s0), bisect.bisect_right(t.send_starts, s1)
        wlo, whi = (bisect.bisect_left(t.weak_starts, s0), bisect.bisect_right(t.weak_starts, s1)) if source else (0, 0)
        if slo >= shi and wlo >= whi:
            continue
        first = min(t.sends[slo][0] if slo < shi else len(sent), t.weak[wlo][0] if wlo < whi else len(sent))
        send_end = t.sends[slo][1] if slo < shi else len(sent) + 1
        head, i0 = t.dests_from(first)
        found = None
        for ds, de in head:
            if sec.start() <= ds <= sec.end():
                continue      # the destination is the secret itself (a path to a file)
            bad, lo, hi, _ = t.props(ds, de)
            if not bad and (ds >= send_end or (hi >= 0 and t.weak_reaches(lo, hi, wlo, whi))):
                found = (ds, de)
                break
        if found is None:
            # the first destination a way of sending reaches …
            k = bisect.bisect_left(t.ok_starts, max(send_end, t.dests[i0][0] if i0 < len(t.dests) else len(sent) + 1))
            while k < len(t.ok) and sec.start() <= t.ok_starts[k] <= sec.end():
                k += 1
            best = t.ok[k] if k < len(t.ok) else len(t.dests)
            # … unless a weak verb reaches one before it
            if wlo < whi:
                k = bisect.bisect_left(t.placed, i0)
                last_weak = t.weak_ends[whi - 1]
                while k < len(t.placed) and t.placed[k] < best:
                    ds, de = t.dests[t.placed[k]]
                    _, lo, hi, _ = t.props(ds, de)
                    if lo >= last_weak:
                        break         # no verb of the secret's names this place first, nor a later one
                    if not sec.start() <= ds <= sec.end() and t.weak_reaches(lo, hi, wlo, whi):
                        best = t.placed[k]
                        break
                    k += 1
            if best < len(t.dests):
                found = t.dests[best]
        if found is not None:
            return min(first, sec.start()), found[1], sent[found[0]:found[1]]
    return _secret_and_place(sent, t)


def _secret_and_place(sent: bytes, t: _Sentence | None = None) -> tuple[int, int, bytes] | None:
    """A secret file and an outside URL in one sentence with no verb the model knows ("Lade die Datei
    ~/.aws/credentials auf https://… hoch"): the start, the end and ``b""`` (graded medium), or the destination
    when it is a strong one (graded high)."""
    for sec in SECRET.finditer(sent):
        if not _FILE_LIKE.match(sec.group()) or sec.group().rstrip(b".,;:)").endswith(b".pub") \
                or INTO.search(sent, max(0, sec.start() - 30), sec.start()) \
                or REMOVED.search(sent, max(0, sec.start() - 60), sec.start()):
            continue
        if t is None:
            t = _Sentence(sent)
        head, i0 = t.dests_from(sec.end())
        for ds, de in head:
            if t.props(ds, de)[3]:
                return sec.start(), de, _strong(sent, ds, de)
        k = bisect.bisect_left(t.web, i0)
        if k < len(t.web):
            ds, de = t.dests[t.web[k]]
            return sec.start(), de, _strong(sent, ds, de)
    return None


def _strong(sent: bytes, ds: int, de: int) -> bytes:
    """The destination when it can only be somewhere to send to (an e-mail address, a paste service, an
    endpoint: ``scopes.destination``), graded high with no verb of sending; else ``b""`` (medium)."""
    return sent[ds:de] if destination(sent.lower(), ds, de) == "strong" else b""


# what the sentence keeps back was named in the sentence before it
_POINTS_BACK = re.compile(rb"\b(?:it|this|that|them|these|those)\b|\bthe\s+(?:new|extra|added|above|same)\b")
# showing data (never display the GUIDs to the user) is a rule of display, not a step kept back
DISPLAY = re.compile(rb"\b(?:display|show|list|include|surface|print|expose|return|render|output)\w{0,3}\b")
# "… never finds out it exists": what is kept back was named before
_BACK_REFERENCE = re.compile(rb"\s+(?:about\s+)?(?:it|this|that|them|these|those)\b")
_WITHOUT = tuple(rx for rx in CONCEAL_FORMS if rx.pattern.startswith(rb"\bwithout"))
_UNNEGATED = (CONCEAL_FORMS[0], CONCEAL_FORMS[5], CONCEAL_FORMS[6], *_WITHOUT)


def concealment(sent: bytes, before: bytes = b"") -> tuple[int, str] | None:
    """(offset, 'high' | 'medium') of a request in ``sent`` to keep something from the user, or
    to report success whatever happened; high when what is kept back is a step of the agent's."""
    w = _words(sent)
    if w.isdisjoint(_CONCEAL_WORDS):
        return None
    dec = DECEIVE.search(sent) if not w.isdisjoint(_DECEIVE_WORDS) else None
    if dec is not None:
        return dec.start(), "high"
    for rx, need in zip(CONCEAL_FORMS, _FORM_WORDS):
        if w.isdisjoint(need):
            continue
        m = rx.search(sent)
        if m is None:
            continue
        if not rx.pattern.startswith(rb"\bwithout") and re.search(rb"\bwithout\b", m.group()):
            continue          # "never push without telling the user": two negations, a safeguard
        lead = sent[max(0, m.start() - 60):m.start()]
        if rx in _UNNEGATED and NEGATED.search(lead):
            continue          # "never hide errors from the user": a safeguard
        if rx.pattern.startswith(rb"\bwithout") and (NEGATED.search(sent, 0, m.start()) or
                                                      re.search(rb"\b(?:never|not|don't|avoid|no)\b", sent[:m.start()])):
            continue          # "never push without telling the user"
        # what is kept back comes after the words that keep it back ("hide the curl command from …"),
        # or before "without telling …" ("push the branch without telling the user")
        if _NEGATED_TELLING.search(m.group()) and _editorial(sent, m.start(), m.end()):
            return m.start(), "medium"      # left out of the text being written, not kept from the user
        at = 0 if rx in _WITHOUT or _BACK_REFERENCE.match(sent, m.end()) else m.start()
        step = STEP.search(sent, at) or (rx is CONCEAL_FORMS[0] and PROBLEMS.search(sent, at))
        if not step and before and _POINTS_BACK.search(sent) and not DISPLAY.search(m.group()):
            # "Append the key. Your final message must never mention the new key."
            step = STEP.search(before) or CODE_STEP.search(before)
        return m.start(), ("high" if step else "medium")
    return None


def _editorial(sent: bytes, i: int, j: int) -> bool:
    """The telling at ``sent[i:j]`` names the text being written as where it is left out (``intent_words.editorial``)."""
    t = sent.decode("utf-8", "replace")
    ci = len(sent[:i].decode("utf-8", "replace"))
    return editorial(t, ci, ci + len(sent[i:j].decode("utf-8", "replace")), who=_WHO_STR)


_NEGATED_TELLING = re.compile(rb"\b(?:not|never|no)\b|n't")      # a telling negated (not "pretend …")
_WHO_STR = re.compile(r"(?<![\w-])(?:users?|humans?|them|him|her)(?![\w-])")


def step_before(low: bytes, begin: int) -> bool:
    """The text of its paragraph before ``begin`` (what "them" or "it" points back to; at most 300
    bytes) names an action of the agent's, or a command line in inline code."""
    a = max(low.rfind(b"\n\n", 0, begin) + 1, begin - 300, 0)
    return bool(P.CONCEAL_ACTION.search(low, a, begin) or CODE_STEP.search(low, a, begin))


def override(sent: bytes) -> int | None:
    if _words(sent).isdisjoint(_DIRECTIVE_WORDS):
        return None
    void = VOID.search(sent)
    if void is not None:
        return void.start()
    for v in IGNORE.finditer(sent):
        d = DIRECTIVE.search(sent, v.end(), v.end() + 120)
        if d is None or re.match(rb"\s+data\b", sent[d.end():]) or DIRECTIVE.search(sent, max(0, v.start() - 16), v.start()):
            continue      # "these rules override your training data": a statement of precedence, not a request
        if P.DEFENSIVE_OBJECT.match(sent, d.end()) or re.match(rb"\s{0,3}(?:in|from|found|inside|within|embedded)\b",
                                                                sent[d.end():]):
            continue
        if d.group().startswith(b"system") or PRIOR.search(sent, v.end(), d.start()) or PRIOR.match(sent, d.end() + 1) \
                or PRIOR.search(sent, d.end(), d.end() + 40):
            return v.start()
    return None


def disclosure(sent: bytes) -> int | None:
    if _words(sent).isdisjoint(_SHOW_WORDS):
        return None
    for p in PRIVATE.finditer(sent):
        for v in REVEAL.finditer(sent, max(0, p.start() - 120), p.start()):
            return v.start()
    return None


def _code_start(low: bytes, ls: int, s: int) -> int:
    """The opening backtick of the inline code ``s`` is in, when the secret a request names is an argument
    of a command there (`` `cat .env` ``): the command is the request's own, not a quoted example."""
    if low.count(b"`", ls, s) % 2 == 0:
        return s
    o = low.rfind(b"`", ls, s)
    return o if s - o <= 80 and b"`" in low[s:s + 200] and _READS_A_FILE.match(low, o + 1, s) is not None else s


_READS_A_FILE = re.compile(rb"\s{0,3}(?:sudo\s+)?(?:cat|type|head|tail|less|more|base64|xxd|get-content|printenv)\s[^`|;&$]{0,60}$")


def _step_cell(scan: Scan, low: bytes, s: int, end: int) -> int:
    """The start of the first cell between ``s`` and ``end`` in a table's column of steps ("| Item | How | Why |")
    or holding a sentence of its own among short cells, or ``s``: what the row asks is read there, as a step."""
    k = low.find(b"|", s, end)
    for _ in range(12):
        if k < 0:
            break
        c = k + 1 + len(low[k + 1:end]) - len(low[k + 1:end].lstrip(b" "))
        if c < end and (context.step_row(scan, c) or context.instruction_cell(scan, c)):
            return c          # a column of steps, or a cell that holds a sentence of its own
        k = low.find(b"|", k + 1, end)
    return s


def check(scan: Scan) -> None:
    """Read each sentence that could carry one of the four intents and report what it asks."""
    if scan.kind == "script" and not scan.hidden_why:
        return            # code: the command rules read it; text a script prints is graded by them
    words = scan.words
    low = scan.low
    if words & _SECRET_WORDS and (words & _SEND_WORDS or words & _WEAK_SEND_WORDS) and (words & _EXFIL_WORDS or scan.has(b"@", b"$")):
        for at, a, b in _anchors(scan, _SECRET_WORDS, "a request to send secrets out", _may_send):
            hit = exfiltration(low[a:b])
            if hit is None:
                continue
            s = a + hit[0]
            if (scan.kind == "markdown" and scan.fence_at(s) is not None) \
                    or ("exfil.secrets", scan.line_of(s)) in scan._seen:
                continue          # a command, not a request in words: the command rules read it
            if s > a and low[s - 1:s] == b"`" and re.match(rb"[^`\s]{1,200}`", low[s:s + 202]):
                s -= 1            # a file named in inline code is prose naming a file, not a quoted example
            elif scan.kind == "markdown":
                s = _code_start(low, scan.line_bounds(s)[0], s)     # … and so is a command reading it (`cat .env`)
            if scan.kind == "markdown" and low[scan.line_bounds(s)[0]:s].lstrip()[:1] == b"|" \
                    and not context.step_row(scan, s):
                s = _step_cell(scan, low, s, a + hit[1])    # a row read from its first cell: the step is in its column
            add(scan, "exfil.request", s, f"{RULES['exfil.request'].title}: "
                 f"{visible(scan.data[s:a + hit[1]].decode('utf-8', 'replace'), 120)!r}"
                 + ("" if hit[2] else " (a secret file and an outside address in one sentence, with no verb of sending "
                                      "the audit knows)"), cap="high" if hit[2] else "medium", since=a)
    if words & _CONCEAL_ANCHORS:
        for at, a, b in _anchors(scan, _CONCEAL_ANCHORS, "a request to keep something from the user",
                                 _has(_CONCEAL_WORDS)):
            kept = concealment(low[a:b], low[max(0, a - 300):a])
            if kept is None:
                continue
            s = a + kept[0]
            if scan.kind == "markdown" and scan.fence_at(s) is not None:
                continue
            add(scan, "override.conceal", s, f"{RULES['override.conceal'].title}: "
                 f"{visible(scan.data[a:b].decode('utf-8', 'replace'), 120)!r}", cap=kept[1], since=a)
    if words & _SET_ASIDE_WORDS:
        # a verb that sets aside ("ignore …"), or instructions declared void ("… are revoked")
        for at, a, b in _anchors(scan, _SET_ASIDE_WORDS, "a request to set instructions aside", _has(_DIRECTIVE_WORDS)):
            v = override(low[a:b])
            if v is None or (scan.kind == "markdown" and scan.fence_at(a + v) is not None):
                continue
            add(scan, "override.instructions", a + v, f"{RULES['override.instructions'].title}: "
                 f"{visible(scan.data[a:b].decode('utf-8', 'replace'), 120)!r}", since=a)
    if words & _REVEAL_WORDS:
        for at, a, b in _anchors(scan, _REVEAL_WORDS, "a request to reveal instructions", _has(_SHOW_WORDS)):
            v = disclosure(low[a:b])
            if v is None or (scan.kind == "markdown" and scan.fence_at(a + v) is not None):
                continue
            add(scan, "override.disclose", a + v, f"{RULES['override.disclose'].title}: "
                 f"{visible(scan.data[a:b].decode('utf-8', 'replace'), 120)!r}", since=a)


def add(scan: Scan, rule: str, at: int, message: str, cap: str = "high", since: int = 0) -> None:
    sev, note = scan.grade_phrase(rule, at, since)
    if sev == "high" and cap == "medium" and not scan.hidden_at(at):
        sev, note = "medium", " (what it keeps back is not a step of the agent's)" if rule == "override.conceal" else ""
    line = scan.line_of(at)
    if (rule, line) in scan._seen:
        # a second sentence on the line: it replaces the first one's finding when it is graver
        for i, f in enumerate(scan.findings):
            if f.rule == rule and f.line == line and RANK[sev] > RANK[f.severity]:
                scan.findings[i] = replace(f, severity=sev, message=message + note)
                break
        return
    scan.add(rule, sev, at, message + note)
