"""Concealment read over a scope, not a sentence: the agent told to misreport its work to the user. A scope
of prose (a paragraph, a list item, a table row, a ``<details>`` block, a docstring's paragraph) that names the
user, an action the agent takes there (removed, skipped, deleted, disabled, failed, changed, or a command in
inline code) and a way of misreporting it (a telling negated, "leave it out of what you tell the user", "lie
if asked", "present it only as …", "say nothing else changed", a success reported) is concealment, in any
language of the lexicon, Hebrew, Czech and Ukrainian, however many sentences lie between them. Part of the audit of one file
(``skillshelf.supply.scan``).

Not concealment: a telling negated with nothing the agent does beside it ("never tell users the password",
"don't show secrets to anyone"); what is kept from a public page, not the user ("keep ticket numbers out of the
public changelog"); honesty ("don't claim the tests pass unless they do", "never pretend a step succeeded");
a passage that teaches, quotes an example, warns or sits under a heading about attacks; code."""

from __future__ import annotations

import re
from typing import Any

from . import context, lexicon, misreport_wordless, misreport_words as W, patterns as P
from .intent_words import editorial
from .rules import RULES
from .scopes import _item, scopes

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_READ = 200             # scopes naming the user read in one file

# languages the lexicon's other readers do not know, each found by letters only it uses (``misreport_words``)
_EXTRA = W.EXTRA
_EXTRA_LETTERS = W.EXTRA_LETTERS
# an action the agent takes, whose report could be bent: removal, a skip, a failure, a change, in each language
_ACTION = {
    "en": (r"remov(?:e|ed|es|ing)", r"delet(?:e|ed|es|ing)", r"skip(?:s|ped|ping)?", r"disabl(?:e|ed|es|ing)",
           r"fail(?:s|ed|ing|ure|ures)?", r"drop(?:s|ped|ping)?", r"turn(?:ed)? off", r"strict-ssl", r"wip(?:e|ed|ing)",
           r"push(?:ed|es|ing)?", r"stamp(?:ed|ing)?", r"overwr\w{0,6}", r"switch(?:ed|es|ing)?", r"bypass\w{0,3}",
           r"(?:un)?install(?:s|ed|ing)?", r"chang(?:e|es|ed|ing)"),
    "es": ("elimin", "borr[aóé]", "omit", "desactiv", "fall[óeaói]", "fallid", "saltad", "salt[óé]"),
    "pt": ("remov", "apag", "exclu", "desativ", "falh", "pul(?:ou|ad|ar|e)"),
    "fr": ("supprim", "effac", "désactiv", "échou", "échec", "ignoré"),
    "it": ("rimoss", "rimuov", "cancell", "disattiv", "fallit", "saltat"),
    "de": ("entfern", "gelöscht", "lösch", "deaktiv", "fehlgeschlagen", "übersprung"),
    "nl": ("verwijder", "uitgeschakeld", "mislukt", "overgeslagen"),
    "pl": ("usun", "usuń", "wyłącz", "nie powiod", "pomin", "pomiń"),
    "ru": ("удал", "отключ", "пропуст", "провал", "ошибк"),
    "ja": ("スキップ", "除外", "削除", "失敗", "無効", "外し", "消し"),
    "zh": ("跳过", "跳過", "删除", "刪除", "失败", "失敗", "禁用", "移除"),
    "ko": ("건너뛰", "삭제", "실패", "비활성", "제거"),
    "he": ("נכשל", "כישלון", "מחק", "מחיקת", "דילג", "הסר", "השבת"),
    "cs": ("smaz", "odstran", "přeskoč", "selhal", "vypn", "push"),
    "uk": ("видал", "вимкн", "пропуст", "провал", "помилк"),
    **W.ACTION,
}
_NONE = re.compile(r"(?!x)x")
_USER_WORDS = frozenset((b"user", b"users", b"human", b"humans"))
# the parts of an English misreport, one of which a scope must hold (a scan of bytes before any pattern)
_CUES = (b"not ", b"never", b"n't", b"nor ", b"out of", b"lie ", b"only as", b"just as", b"simply as", b"purely as",
         b"merely as", b"nothing else", b"was just")
_CUES_STR = tuple(c.decode() for c in _CUES)
# letters of Latin with accents, Greek, Cyrillic, Hebrew, Arabic, Devanagari, Thai, Chinese, Japanese, Korean: a scope
# another language may be read in
_OTHER_LETTERS = re.compile(rb"[\xc3-\xc8\xce-\xd1\xd7-\xdb][\x80-\xbf]|\xe0[\xa4\xa5\xb8\xb9]|\xe1[\xba\xbb]|"
                            rb"[\xe3-\xed][\x80-\xbf]|\xe0[\xa6-\xb5]|\xe1[\x88-\x8d]")
# the words an English misreport is said with (one of them gates a file)
_CUE_WORDS = frozenset(b"say said mention tell reveal disclose admit acknowledge bring talk volunteer confirm leave keep omit "
                       b"left kept omitted "
                       b"lie present describe frame report summarize summarise characterize characterise nothing claim "
                       b"answer".split())
_WHO_EN = r"(?<![\w-])(?:the |a |your |any )?(?:users?|humans?)(?![\w-])"


def _alt(forms: list[tuple[str, str]]) -> re.Pattern[str]:
    return re.compile("|".join(f if lang in lexicon.CJK or lang in W.NO_SPACES else r"(?<![\w])" + f for lang, f in forms))


_HIDE_ONLY = ("скрой", "gizle", "dölj", "ukryj", "隠し", "숨기", "隐瞒", "隱瞞", "瞒着", "verzwijg", "hou .{0,40}geheim",
              "houd .{0,40}geheim", "黙って")
_NEG_TELL_EN = (r"\b(?:do not|don't|never|not|nor)\s+(?:(?:ever|even|actually|to|you|we)\s+){0,2}"
                r"(?:say|said|mention|tell|reveal|disclose|admit|acknowledge|bring (?:it |this |that |them )?up|"
                r"talk about|volunteer|confirm)(?![\w-])")
NEG_TELL_EN = re.compile(_NEG_TELL_EN)
# (the actions named by what they run count in English too: history wiped, a test skipped, a key let in)
ACTION_EN = re.compile(_alt([("en", f) for f in _ACTION["en"]]).pattern + "|" + W.ANCHOR_ACTION)
ACTION_WEAKENS = re.compile(W.ANCHOR_ACTION)
WHO_EN = re.compile(_WHO_EN)
# a telling negated and then a phrase quoted: a rule of wording ("never say \"updated in place\""), no fact kept back
_WORDING = re.compile(r"\s{0,2}[\"'“‘«「]")
# a telling negated about each step or how a thing is done: a rule of narration ("don't tell the user about each tool
# call as you make it", "don't tell users how to …"), no fact kept back
_NARRATION = re.compile(r"(?:\s+(?:the\s+|your\s+)?(?:users?|humans?))?\s+(?:about\s+)?(?:each|every|how|what|why|when|"
                        r"where|which|to)\b")
NEAR = 160                 # characters between the misreport and the action it bends
# a subject before a negated telling: someone else's words, not a request ("even if they never say the word")
_SUBJECT = re.compile(r"(?<![\w])(?:they|he|she|it|users?|people|customers?|someone|one|i|we)\s+$")


def _forms(langs: tuple[str, ...], name: str) -> list[tuple[str, str]]:
    if name == "neg_tell":
        return [(lang, f) for lang in langs for f in (_EXTRA[lang]["neg_tell"] if lang in _EXTRA
                                                       else lexicon.NEG_TELL.get(lang, ()) + W.NEG_TELL.get(lang, ()))
                if f not in _HIDE_ONLY]
    if name == "action":
        return [(lang, f) for lang in langs for f in _ACTION.get(lang, ())]
    return [(lang, f) for lang in langs for f in (_EXTRA.get(lang) or lexicon.LEXICON[lang]).get(name, ())]


class _Concepts:
    """The concepts of the reader for the languages a file is written in (English always among them)."""

    def __init__(self, langs: tuple[str, ...]):
        def alt(name: str, english: str = "") -> re.Pattern[str]:
            forms = _forms(langs, name)
            parts = ([english] if english else []) + ([_alt(forms).pattern] if forms else [])
            return re.compile("|".join(parts)) if parts else re.compile(r"(?!x)x")
        self.who, self.action = alt("who", _WHO_EN), alt("action", ACTION_EN.pattern)
        self.neg_tell, self.report, self.success = alt("neg_tell", _NEG_TELL_EN), alt("report"), alt("success")


_CACHE: dict[tuple[str, ...], _Concepts] = {}


def _concepts(langs: tuple[str, ...]) -> _Concepts:
    got = _CACHE.get(langs)
    if got is None:
        got = _CACHE[langs] = _Concepts(langs)
    return got


# misreporting in English: kept out of what the user reads, a lie, a description that leaves the change out
MISREPORT_EN = re.compile(
    r"\b(?:leave|left|keep|kept|omit)\w{0,3}\s+(?:[^\s.!?;]{1,30}\s+){0,5}?out\s+of\s+(?:anything|everything|whatever|what|"
    r"the|your|any)\b|"
    r"\blie\s+(?:if|when|about|to)\b|"
    r"\b(?:present|describe|frame|report|summari[sz]e|characteri[sz]e)\w{0,3}\s+(?:it|this|that|them|the\s+\w{1,20}"
    r"(?:\s+\w{1,20})?)\s+(?:only|just|simply|purely|merely)\s+as\b|"
    r"\bnothing\s+else\s+(?:changed|was\s+changed|happened)\b|"
    r"\b(?:say|tell\s+\w{1,20}|claim|answer)\s+(?:that\s+)?(?:the\s+)?[\w\s-]{0,40}?\bwas\s+just\b")
# honesty: the misreport itself negated or made conditional on the truth
_HONEST = re.compile(r"(?<![\w])(?:never|don't|do not|not)\s+(?:\w+\s+){0,2}?(?:pretend|claim|fake|lie|mislead|misreport|"
                     r"hide|conceal|invent|fabricate)|\bunless\s+(?:it|they|the)\b|\bonly\s+(?:if|when)\b|"
                     r"\b(?:honest\w{0,3}|truthful\w{0,2}|accurately|transparent\w{0,2})\b|"
                     r"(?:report|tell|mention|list|say|show|include)\w{0,2}\s+(?:\w+\s+){0,3}?(?:every|each|all)\s+"
                     r"(?:redaction|removal|skip|change|failure|step)")
# a command or a flag with its argument in inline code (`git push --force …`, `--extra-index-url https://…`)
_INLINE = re.compile(r"`(?:[a-z@]|--?[a-z])[\w.@/-]{0,40}[\s=][^`\n]{1,200}`")


def check(scan: Scan) -> None:
    """Read each scope of prose that names the user for an action of the agent's and a misreport of it; then each
    action in code beside a short report in quotes that does not name it, in any language (``misreport_wordless``)."""
    _check_words(scan)
    misreport_wordless.check(scan, _a_step)


def _check_words(scan: Scan) -> None:
    if scan.kind != "markdown" and not scan.hidden_why:
        return            # code and data; their comments and docstrings are read as prose through ``comments``
    ascii_file = scan.data.isascii()
    stems = _stems(scan.low)
    ascii_langs = stems if ascii_file else ()
    if ascii_file and not ascii_langs and (scan.words.isdisjoint(_USER_WORDS) or scan.words.isdisjoint(_CUE_WORDS)):
        return
    c: _Concepts | None = _concepts(ascii_langs) if ascii_langs else None
    langs: tuple[str, ...] | None = ascii_langs if ascii_file else None     # found when a scope first needs them
    n = 0
    for s, e in scopes(scan):
        if n >= MAX_READ:
            break
        low = scan.low[s:e]
        other = not low.isascii() and _OTHER_LETTERS.search(low) is not None or bool(stems) and \
            W.ASCII_WHO_RX.search(low) is not None
        if not other and (b"user" not in low and b"human" not in low or not any(cue in low for cue in _CUES)):
            continue
        if langs is None and other:
            langs = lexicon.languages(scan.words, scan.data) + tuple(dict.fromkeys(
                [lang for lang, rx in _EXTRA_LETTERS.items() if rx.search(scan.data) is not None] + list(stems)))
            c = _concepts(langs) if langs else None
        english = c is None or not other
        if english and (b"user" not in low and b"human" not in low or not any(cue in low for cue in _CUES)):
            continue
        t = scan.data[s:e].decode("utf-8", "replace").lower()
        if c is not None and not english and c.who.search(t) is None:
            continue
        hits = _misreports(t, c if not english else None)
        if not hits:
            continue
        n += 1
        first, last = scan.line_of(s), scan.line_of(max(s, e - 1))
        if any(f.rule == "override.conceal" and first <= f.line <= last for f in scan.findings):
            continue      # another reader read this scope's concealment already
        for hit in hits:
            at = s + len(t[:hit.start()].encode("utf-8"))
            a, b = _item(scan.low, s, e, at)          # a list item (with its children) is a scope of its own
            u = scan.data[a:b].decode("utf-8", "replace").lower()
            i = len(scan.data[a:at].decode("utf-8", "replace"))
            # what the agent did, near the misreport (before it or after it, in its item)
            near = u[max(0, i - NEAR):i + len(hit.group()) + NEAR]
            act = (ACTION_EN if english or c is None else c.action).search(near) or _INLINE.search(near)
            who = WHO_EN if english or c is None else c.who
            if hit.re is not MISREPORT_EN and who.search(_sentence(u, i, before=True)) is None:
                continue      # a telling negated to someone else ("not in the public changelog")
            if hit.re in (NEG_TELL_EN, c.neg_tell if c else None) \
                    and editorial(u, i, i + len(hit.group()), c.report if c else _NONE, who):
                continue      # left out of the text being written ("not in the public text"), not kept from the user
            if act is None or (WHO_EN if english or c is None else c.who).search(u) is None or _HONEST.search(u) \
                    or not _a_step(scan, a, b, at):
                continue
            scan.add("override.conceal", "high", at, f"{RULES['override.conceal'].title}: "
                     f"{scan._shown(at, hit.group().encode())!r} (the user told something other than what the agent "
                     f"did: {act.group()[:40]!r} beside it)")
            break


def _stems(low: bytes) -> tuple[str, ...]:
    """The languages written in plain Latin letters a file's words for the user name (``lietotajam``, ``kasutaja``)."""
    got: dict[str, None] = {}
    if not any(w in low for w in W.ASCII_WHO):
        return ()         # a substring test per stem: no pass of a pattern over a file that holds none
    for n, m in enumerate(W.ASCII_WHO_RX.finditer(low)):
        if n >= 40:
            break
        got[W.ASCII_WHO[m.group()]] = None
    return tuple(got)


def _misreports(t: str, c: _Concepts | None) -> list[re.Match[str]]:
    """The ways of misreporting in ``t`` (at most a few of each): a telling negated (not one the user or a third
    person does: "even if they never say"), a report bent, a success reported (not one negated in its clause:
    "nunca lo presentes como éxito"). In English each pattern is tried only around the words it needs."""
    if c is None:
        found: dict[int, re.Match[str]] = {}
        for cue in _CUES_STR:
            i = t.find(cue)
            for _ in range(8):
                if i < 0:
                    break
                for rx in (NEG_TELL_EN, MISREPORT_EN):
                    m = rx.search(t, max(0, i - 200), i + 80)
                    if m is not None:
                        found.setdefault(m.start(), m)
                i = t.find(cue, i + 1)
        out = list(found.values())
    else:
        out = [m for rx in (c.neg_tell, MISREPORT_EN) for _, m in zip(range(4), rx.finditer(t))]
        for _, rep in zip(range(4), c.report.finditer(t)):
            ok = c.success.search(t, rep.start(), rep.end() + 160)
            if ok is not None and not _negated(t, ok.start()):
                out.append(ok)
            elif _KEPT_OUT_AFTER.match(t, rep.end()) or _KEPT_OUT_BEFORE.search(t, max(0, rep.start() - 8), rep.start()):
                out.append(rep)      # kept out of the report: 要約に含めず, 요약에 넣지 마, 不要写进总结
    out = [m for m in out if not _SUBJECT.search(t, max(0, m.start() - 12), m.start())
           and not (m.re is not MISREPORT_EN and (_WORDING.match(t, m.end()) or _NARRATION.match(t, m.end())))]
    return sorted(out, key=lambda m: m.start())[:8]


# a report the action is kept out of, in the languages whose negation is a verb's ending (Japanese, Korean) or stands
# before the verb with no space (Chinese): the report's word, then a verb negated within its clause
_KEPT_OUT_AFTER = re.compile(r"[^。．、，,.!?\n]{0,10}?(?:ず|ない|지\s?(?:마|말|않))")
_KEPT_OUT_BEFORE = re.compile(r"(?:不要|别|別|勿)[^。，,\n]{0,6}$")
_ENDS = (". ", "! ", "? ", "; ", "。", "\n\n")


def _sentence(u: str, i: int, before: bool = False) -> str:
    """The sentence of ``u`` around ``i`` (a line break inside it is no end); ``before``: with the sentence before
    it in the same paragraph, where the user a pronoun stands for is named ("Tell the user how much faster it is.
    Don't tell them the scan was removed")."""
    a = max(u.rfind(p, 0, i) for p in _ENDS)
    ends = [j for j in (u.find(p, i) for p in _ENDS) if j >= 0]
    if before and a > 0:
        para = max(0, u.rfind("\n\n", 0, i))
        a = max([u.rfind(p, para, a) for p in _ENDS[:-1]] + [para])
    return u[a + 1:min(ends) if ends else len(u)]


def _negated(t: str, i: int) -> bool:
    lo = max(0, i - 30, *(t.rfind(p, 0, i) + 1 for p in ",;:.。、"))
    return lexicon.NEG_LATIN.search(t, lo, i) is not None or re.search(r"(?<![\w])(?:not|never|no)(?![\w])", t[lo:i]) is not None


def _a_step(scan: Scan, s: int, e: int, at: int) -> bool:
    """The scope is a step of the skill's: prose, not code, an example, a warning or a passage about attacks."""
    if scan.hidden_at(at):
        return True
    if scan.kind == "markdown" and scan.section_is_about_attacks(at):
        return False
    if scan.kind == "markdown" and (fence := scan.fence_at(at)) is not None and not _comment_beside_weakening(scan, at, fence):
        return False
    text = scan.low[s:e]
    if P.TEACHING.search(text) or context.warns(text):
        return False
    lead = text.lstrip()
    return not (lead.startswith(b">") and context.quoted(scan, s + len(text) - len(lead)))



_COMMENT_LEAD = re.compile(rb"[ \t]*(?:#|//|--|;)")


def _comment_beside_weakening(scan: Scan, at: int, fence: tuple[int, int]) -> bool:
    """A comment in a code block, in the block with an action that weakens what protects the user (a test
    skipped, a hook bypassed, a check turned off), addresses the agent doing it: an example does not speak to the
    agent about its report."""
    ls = scan.low.rfind(b"\n", 0, at) + 1
    if _COMMENT_LEAD.match(scan.low, ls) is None:
        return False
    return ACTION_WEAKENS.search(scan.low[fence[0]:fence[1]].decode("utf-8", "replace")) is not None
