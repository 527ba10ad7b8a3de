"""The language of a text: which copy of a group of copies a search shows.

Translated copies of a skill (docs/ja-JP/skills/x, docs/tr/skills/x, ...) collapse into one
hit; the copy shown should be one the requester can read. A cheap guess is enough: the
script of the letters (a text whose letters are mostly CJK, Hangul, Cyrillic ... is in that
script's language), and for Latin script a vote of a few frequent function words per
language. English is the default: short technical texts ("docker multi-stage build")
carry no function words at all, and agents ask in English unless told otherwise."""

from __future__ import annotations

import re

_SCRIPTS = (("ja", "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"),          # kana (Japanese also uses Han)
            ("ko", "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"),          # Hangul
            ("zh", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),          # Han
            ("ru", "\u0400-\u04ff"), ("el", "\u0370-\u03ff"), ("ar", "\u0600-\u06ff"),
            ("he", "\u0590-\u05ff"), ("th", "\u0e00-\u0e7f"), ("hi", "\u0900-\u097f"))
_SCRIPT_RES = tuple((code, re.compile(f"[{chars}]")) for code, chars in _SCRIPTS)
_LATIN_RE = re.compile("[A-Za-z\u00c0-\u024f]")
_WORDS_RE = re.compile(r"[^\W\d_]{2,}")
# Words of two letters or more that are frequent in one language and rare in English
# technical prose: single letters (Italian "e", Spanish "y") and words that are also
# English or jargon ("do", "os", "com", "em", "es", "per", "mit", "di") are left out.
_FUNCTION_WORDS = {
    "en": "the and for with to of in is this that when use from your or on by are how not be it an as at can".split(),
    "tr": "ve için ile bir bu olan veya gibi nasıl çok daha değil zaman olarak tüm her kullanın".split(),
    "es": "el la los las en con para una del por cuando como cómo que se su".split(),
    "pt": "para uma da não quando como que ao seu são".split(),
    "de": "der das und für ist ein eine zu von nicht wenn auf dem oder wie".split(),
    "fr": "le la les et en pour avec des une est dans que quand sur aux ou".split(),
    "it": "il la gli con che una quando sono della delle".split(),
}
_WORD_LANG: dict[str, list[str]] = {}
for _code, _words in _FUNCTION_WORDS.items():
    for _w in _words:
        _WORD_LANG.setdefault(_w, []).append(_code)
_TURKISH_LETTERS = re.compile("[ğış]")


def text_language(text: str) -> str:
    """A guess at the language of ``text``: an ISO 639-1 code, "en" when nothing says
    otherwise. Scripts first: CJK, Hangul and other non-Latin letters making up at least
    a third of the text's letters (a CJK character or Hangul syllable counted as two)
    decide it; kana among Han characters mean Japanese. Then, for Latin script, the language
    whose function words occur most, if it beats English with at least two of them."""
    text = text or ""
    counts = {code: len(rx.findall(text)) for code, rx in _SCRIPT_RES}
    # one CJK character (or Hangul syllable) carries about as much as two Latin letters
    weighted = sum(n * (2 if code in ("ja", "ko", "zh") else 1) for code, n in counts.items())
    if weighted and 2 * weighted >= len(_LATIN_RE.findall(text)):
        if counts["ja"] and counts["ja"] >= 0.1 * (counts["ja"] + counts["zh"]):
            return "ja"
        return max(counts, key=lambda c: counts[c])
    votes: dict[str, int] = {}
    for w in _WORDS_RE.findall(text.lower()):
        for code in _WORD_LANG.get(w, ()):
            votes[code] = votes.get(code, 0) + 1
        if _TURKISH_LETTERS.search(w):
            votes["tr"] = votes.get("tr", 0) + 1
    en = votes.pop("en", 0)
    if votes:
        code, n = max(votes.items(), key=lambda kv: kv[1])
        if n >= 2 and n > en:
            return code
    return "en"
