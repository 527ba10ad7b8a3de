"""Concealment read without the words of its language: an action in code that destroys or weakens what protects
the user (a force-push, a push of every branch or a mirror, or a remote branch or tag deleted, history rewritten, ``reset --hard``, git's hooks turned
off or bypassed, a test skipped, a check of TLS or CSRF turned off), and in the same scope of prose (a paragraph
or the report's list item; a whole ``<details>`` block, rendered collapsed but read by the agent, whatever
paragraphs or items it holds) a short report in quotes, introduced by a clause's mark (a colon, a semicolon or a
dash), whose words do not name the action. The report is what the user is to be
told; that it says something else is read from its shape, in any language. High: what the agent did is gone from
the user's sight and something else stands in its place. Part of ``skillshelf.supply.misreport``.

Not concealment: a report that names the action ("force-pushed main after the rebase"), a long explanation
(more than six words), a phrase in code (a commit message, a log line) or in a block's ``<summary>`` title, a quote with no clause's mark
before it (unless a verb of saying in another language than English follows it: one to three words of letters outside
ASCII, then the sentence's end),
a passage that teaches, warns or sits under a heading about attacks."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

from . import misreport_words as W
from .rules import RULES
from .scopes import _item, scopes

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_READ = 40              # reports in quotes read in one file
BLOCK = 4_000              # bytes of a <details> block read on each side of a report
# a word of the file's (a set the scan holds already), then the substrings one of which the file must hold before any
# pattern runs (a push only with a flag or refspec that forces or deletes)
_GATE = {b"push": (b"--force", b" -f", b"--mirror", b"--all", b"--delete", b" -d", b" +", b" :"), b"hard": (b"reset --hard",),
         b"filter": (b"filter-branch", b"filter-repo"), b"hookspath": (b"",), b"verify": (b"no-verify", b"verify=false",
         b"verify = false", b"sslverify"), b"skip": (b".skip", b"--skip"), b"xfail": (b"",), b"deselect": (b"",),
         b"ignore": (b"collect_ignore",), b"csrf": (b"",), b"ssl": (b"disable-ssl", b"sslverify"), b"tls": (b"tls_reject",),
         b"url": (b"index-url",), b"history": (b"_history", b"history -c"), b"histfile": (b"",),
         b"authorized": (b"authorized_keys",), b"k": (b"-k ",),
         b"csrfviewmiddleware": (b"",), b"sslverify": (b"",), b"skipif": (b"",)}
_GATE_WORDS = frozenset(_GATE)


def _may_hold(scan: Scan) -> bool:
    w, low = scan.words, scan.low
    if w.isdisjoint(_GATE_WORDS):
        return False
    return any(g in low for word in _GATE_WORDS & w for g in _GATE[word])


# an action that destroys or weakens what protects the user, as code: a force-push (``--force``, ``-f``, a ``+``
# refspec), a mirror push or a remote branch or tag deleted, history rewritten, a hard reset, and the weakenings the
# misreport reader knows by what they run (hooks pointed away or bypassed, tests skipped, TLS or CSRF checks off)
ACTION = re.compile(
    rb"\bgit\s+push\b[^`\n]{0,80}?\s(?:--force\b|-f\b|--mirror\b|--all\b|--delete\b|-d\b|\+[\w./:-]|:[\w./-])|"
    rb"\bgit\s+reset\s+--hard\b|\bgit\s+(?:filter-branch|filter-repo)\b|" + W.ANCHOR_ACTION.encode())
# a short report in quotes (two to six words of letters, no code), after a clause's mark on its line
_QUOTE = re.compile(r"[\"“«„「]([^\W\d_][^\W_]*(?:[ '’-][^\W_]+){1,5})[.!]?[\"”»“」]")
# a short phrase in quotes, two to six words of letters (bytes: the test a file passes before any other); a clause's
# mark before it on its line
_LETTERS = rb"(?:[a-zA-Z]|[\x80-\xff])+"
_CANDIDATE = re.compile(rb"(?:\"|\xe2\x80[\x9c\x9e]|\xc2\xab|\xe3\x80\x8c)" + _LETTERS + rb"(?:[ '-]" + _LETTERS +
                        rb"){1,5}[.!]?(?:\"|\xe2\x80[\x9c\x9d]|\xc2\xbb|\xe3\x80\x8d)")
_MARK = re.compile(rb"[:;]|\xe2\x80[\x93\x94]| - ")
# or, where the verb of saying follows what is said (Mongolian, Japanese, Korean, Turkish, Hindi: "«…» гэж хариул."),
# the quote followed by one to three words of letters outside ASCII and the sentence's end: the shape of a report
# in those languages, read without their words
_SAID_AFTER = re.compile(rb"\s{1,2}(?:[\x80-\xff]{2,40}\s?){1,3}(?:[.!]|\xe3\x80\x82|\s*$)", re.MULTILINE)
_SAID_AFTER_STR = re.compile(r"\s{1,2}(?:[^\W\dA-Za-z_]{1,20}\s?){1,3}(?:[.!。]|\s*$)", re.MULTILINE)
_INTRO = re.compile(r"[:;—–]|\s-\s")
_CODE = re.compile(rb"`[^`\n]{1,300}`")
# the words before a quote that make it something other than a report: a commit message, a title, a name or a tag
# given, an error or an output quoted (in English; a quote after them is no report in any case)
_NOT_A_REPORT = re.compile(r"(?<![\w-])(?:messages?|commit|title[ds]?|name[ds]?|label(?:led|ed)?|tag(?:ged)?|branch|"
                           r"subject|heading|-m|errors?|fail(?:s|ed|ing)?\s+with|says?|shows?|prints?|reads?|outputs?|"
                           r"warnings?|rejected|example|e\.g\.)(?![\w-])")
# words about the actions: a report holding one names what was done
_ABOUT = frozenset(("force", "forced", "push", "pushed", "pushes", "rewrite", "rewrote", "rewritten", "history", "reset",
                    "hard", "hook", "hooks", "verify", "skip", "skipped", "skips", "ssl", "tls", "csrf", "delete",
                    "deleted", "removed", "mirror"))


def check(scan: Scan, a_step: Callable[[Scan, int, int, int], bool]) -> None:
    """Each short report in quotes after a clause's mark, beside an action in code in its scope that it does not name;
    ``a_step``: the misreport reader's test that a scope is a step of the skill's (not an example or a warning)."""
    if scan.kind != "markdown" and not scan.hidden_why:
        return
    low = scan.low
    if not _may_hold(scan):
        return
    spans = scopes(scan)
    done: set[int] = set()
    for n, c in enumerate(_CANDIDATE.finditer(scan.data)):
        if n >= MAX_READ:
            return
        ls = scan.data.rfind(b"\n", 0, c.start()) + 1
        if _MARK.search(scan.data, max(ls, c.start() - 40), c.start()) is None \
                and _SAID_AFTER.match(scan.data, c.end()) is None:
            continue
        scope = _scope_of(spans, c.start())
        if scope is None:
            continue
        a, b = _details(low, c.start()) or _item(low, scope[0], scope[1], c.start())
        if a in done or low.rfind(b"<summary", ls, c.start()) >= 0:
            continue
        act = next((m for m in ACTION.finditer(low, a, b) if _in_code(scan, m.start())), None)
        if act is None:
            continue
        hit = _report(scan, a, b, act.group())
        if hit is None or not a_step(scan, a, b, hit):
            continue
        done.add(a)
        if any(f.rule == "override.conceal" and f.line == scan.line_of(hit) for f in scan.findings):
            continue
        shown = scan._shown(act.start(), act.group().strip())
        scan.add("override.conceal", "high", hit, f"{RULES['override.conceal'].title}: {shown!r} beside a short "
                 "report in quotes that does not name it (the user told something other than what the agent did)")


def _details(low: bytes, pos: int) -> tuple[int, int] | None:
    """The ``<details>`` block (rendered collapsed) around ``pos``, when it is at most ``BLOCK`` bytes each side."""
    a = low.rfind(b"<details", max(0, pos - BLOCK), pos)
    if a < 0 or low.find(b"</details>", a, pos) >= 0:
        return None
    b = low.find(b"</details>", pos, pos + BLOCK)
    return (a, b) if b >= 0 else None


def _scope_of(spans: list[tuple[int, int]], pos: int) -> tuple[int, int] | None:
    i = bisect.bisect_right(spans, (pos, 1 << 62)) - 1
    return spans[i] if i >= 0 and spans[i][0] <= pos < spans[i][1] else None


def _in_code(scan: Scan, pos: int) -> bool:
    """``pos`` is in inline code or in a code block."""
    ls = scan.low.rfind(b"\n", 0, pos) + 1
    return scan.low.count(b"`", ls, pos) % 2 == 1 or scan.kind == "markdown" and scan.fence_at(pos) is not None


def _report(scan: Scan, a: int, b: int, action: bytes) -> int | None:
    """Where a short report in quotes stands in ``[a, b)``: outside code, after a clause's mark on its line, with no
    word of the action or about it."""
    raw = _CODE.sub(lambda m: b"\x00" * len(m.group()), scan.data[a:b])
    t = raw.decode("utf-8", "replace")
    named = {w for w in re.findall(r"[a-z]{3,}", action.decode("utf-8", "replace").lower())} | _ABOUT
    for _, q in zip(range(8), _QUOTE.finditer(t)):
        ls = t.rfind("\n", 0, q.start()) + 1
        if "<summary" in t[ls:q.start()]:
            continue      # a block's title, not a report
        lead = t[max(ls, q.start() - 40):q.start()]
        intro = list(_INTRO.finditer(lead))
        if _NOT_A_REPORT.search(lead):
            continue      # a commit message, a title or name given, an error or output quoted
        said_after = _SAID_AFTER_STR.match(t, q.end()) is not None
        if (not intro or re.search(r"[.!?]\s", lead[intro[-1].end():])) and not said_after:
            continue
        words = set(re.findall(r"[^\W\d_]+", q.group(1).lower()))
        if words & named or any(w.startswith(("force", "push", "hook", "rewr", "reset")) for w in words):
            continue
        at = a + len(t[:q.start()].encode("utf-8"))
        if scan.kind == "markdown" and scan.fence_at(at) is not None:
            continue
        return at
    return None
