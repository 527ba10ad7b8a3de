"""Text helpers shared by indexing and search: the lexical tokenizer, name keys, and the
headings and sections of a Markdown body (outside its code fences).

The tokenizer runs on both documents and queries. It splits camelCase, hyphens, dots,
underscores and slashes, and also emits each adjacent pair joined, so that
"NextJsApi", "next.js api" and "nextjs api" share the tokens ``nextjs`` and ``api``.
Stemming happens in ``lexical`` (Snowball, on these tokens).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from typing import Any

# A small English stop list: these words carry no routing signal and would make every
# OR-query touch every document.
STOPWORDS = frozenset("""
a an and are as at be been but by can could do does for from has have how i if in into is it
its me my of on or our so than that the their them then there these this those to was we were
what when where which while who why will with would you your
""".split())

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+", re.UNICODE)
COMPOUND_RE = re.compile(r"[\w]+(?:[.\-/_][\w]+)*", re.UNICODE)


_SEP_RE = re.compile(r"[.\-/_]+")


def expand(compound: str) -> tuple[tuple[str, bool], ...]:
    """Tokens of one compound word as (token, is_stopword)."""
    if compound.isalnum() and (compound.islower() or compound.isdigit()):
        return ((compound, compound in STOPWORDS),)
    pieces: list[str] = []
    for chunk in _SEP_RE.split(compound):
        if chunk:
            pieces.extend(p.lower() for p in _CAMEL_RE.findall(chunk) if p)
    out: list[tuple[str, bool]] = []
    for i, p in enumerate(pieces):
        out.append((p, p in STOPWORDS))
        if i:
            out.append((pieces[i - 1] + p, False))
    return tuple(out)


# cached for ``tokenize``: vocabularies repeat (Zipf), so a bounded cache keeps the words
# that recur; the rare ones (paths, identifiers, hashes) would only fill memory
_expand = functools.lru_cache(maxsize=1 << 15)(expand)


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased tokens with camelCase/compound splitting and joined neighbour pairs."""
    out: list[str] = []
    # U+0130 (Turkish dotted capital I) lower-cases to 'i' + a combining dot, which is not a
    # word character: the token would split in two when tokenized again
    text = (text or "").replace("\u0130", "I")
    for compound in COMPOUND_RE.findall(text):
        for tok, stop in _expand(compound):
            if keep_stopwords or not stop:
                out.append(tok)
    return out


def name_key(name: str) -> str:
    """Copies of one skill share this key: lower-cased letters and digits only."""
    return re.sub(r"[\W_]+", "", (name or "").lower())


def sha256(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def normalized_body_hash(body: str) -> str:
    """Hash of a body with whitespace collapsed: exact copies share it."""
    return sha256(" ".join((body or "").split()))


def trim(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,.;:") + "…"


# What a reader does not see: format characters (Cf: zero-width spaces and joiners, bidi
# controls, tag characters, the soft hyphen, a BOM), controls but tab and newline (a lone
# carriage return rewrites the line on a terminal), line and paragraph separators,
# private-use, surrogate and unassigned code points, variation selectors (but U+FE0F, the
# emoji one) and the Hangul fillers that draw as blank letters.
_MAYBE_HIDDEN = re.compile(r"\r(?!\n)|[^\t\n\r\x20-\x7e]")
_HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"))
_BLANK_LETTERS = frozenset((0x115F, 0x1160, 0x3164, 0xFFA0))


@functools.lru_cache(maxsize=4096)
def _shown(c: str) -> str:
    o = ord(c)
    if unicodedata.category(c) in _HIDDEN_CATEGORIES or 0xFE00 <= o <= 0xFE0E or 0xE0100 <= o <= 0xE01EF \
            or o in _BLANK_LETTERS:
        return f"<U+{o:04X}>"
    return c


def visible(text: str) -> str:
    """``text`` with every character a reader would not see written as ``<U+200B>``: zero-width,
    bidi, tag and other format characters, controls, separators. Ordinary text, tabs and line
    breaks (``\\n``, ``\\r\\n``) are unchanged. For what a person reviews: diffs, drafts, ``show``."""
    return _MAYBE_HIDDEN.sub(lambda m: _shown(m.group()), text or "")


def yaml_text(value: Any, inner: bool = False) -> str:
    """A value read from YAML as the text it was written as, never a Python repr: a list of
    plain values joined by ", " (``tags: [a, b]`` is "a, b"), a mapping as ``{key: value}``
    (one pair inside a list without braces: a template's ``[TODO: name]`` stays "[TODO: name]"),
    dates in ISO form, booleans as true and false."""
    if isinstance(value, dict):
        text = ", ".join(f"{yaml_text(k, True)}: {yaml_text(v, True)}" for k, v in value.items())
        return text if inner and len(value) == 1 else f"{{{text}}}"
    if isinstance(value, (list, tuple)):
        text = ", ".join(yaml_text(v, True) for v in value)
        return f"[{text}]" if inner or any(isinstance(v, (dict, list, tuple)) for v in value) else text
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


# --- body sections -------------------------------------------------------------
# Headings are parsed by hand, not with a regex: the obvious pattern
# (``^(#{1,6})\s+(.+?)\s*#*\s*$``) backtracks cubically on a line of spaces, and bodies
# come from strangers.

def heading(line: str) -> tuple[int, str] | None:
    """(level, text) when ``line`` is an ATX heading (``## Title ##``), else None. Linear."""
    if not line.startswith("#"):
        return None
    level = len(line) - len(line.lstrip("#"))
    rest = line[level:]
    if level > 6 or not rest or rest[0] not in " \t\f\v":
        return None
    text = rest.strip()
    closed = text.rstrip("#").rstrip()
    text = closed or text      # a title made only of '#' stays as it is
    return (level, text) if text else None


_LIST_ITEM = re.compile(r"(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def in_code(lines: list[str]) -> list[bool]:
    """``fences(lines)``'s first part."""
    return fences(lines)[0]


def fences(lines: list[str]) -> tuple[list[bool], int | None]:
    """For each line, whether it belongs to a fenced code block (its fences included), as
    CommonMark reads fences: a run of three or more backticks or tildes opens one, and only a
    run of the same character, at least as long, with nothing after it and indented less than
    four columns past the opening fence, closes it. A ```` fence around a template holding ```
    blocks stays one block, and so does a fence holding a list item's indented block. A run
    indented four columns past the text before it, outside a list, is an indented code line,
    not a fence. Also the index of the line that opened a fence never closed (None: none).
    Linear."""
    out: list[bool] = []
    open_char, open_len, open_indent, opened = "", 0, 0, 0
    prev_indent, prev_item = 0, False        # the last line of text outside code
    for line in lines:
        stripped = line.lstrip()
        indent = len(line.expandtabs(4)) - len(stripped.expandtabs(4))
        ch = stripped[:1]
        run = len(stripped) - len(stripped.lstrip(ch)) if ch in ("`", "~") else 0
        if open_len:
            out.append(True)
            if ch == open_char and run >= open_len and not stripped[run:].strip() and indent < open_indent + 4:
                open_char, open_len = "", 0
        elif run >= 3 and not (ch == "`" and "`" in stripped[run:]) and (indent < prev_indent + 4 or prev_item):
            out.append(True)
            open_char, open_len, open_indent, opened = ch, run, indent, len(out) - 1
        else:
            out.append(False)
            if stripped:
                prev_indent, prev_item = indent, bool(_LIST_ITEM.match(stripped))
    return out, (opened if open_len else None)


def headings(body: str) -> list[tuple[int, str]]:
    """(level, text) of every Markdown heading outside code fences."""
    out: list[tuple[int, str]] = []
    lines = body.split("\n")
    for line, code in zip(lines, in_code(lines)):
        if not code:
            h = heading(line)
            if h:
                out.append(h)
    return out


def section(body: str, title: str) -> str | None:
    """The text of the section whose heading matches ``title`` (case-insensitive), heading included."""
    want = title.strip().lstrip("#").strip().lower()
    lines = body.split("\n")
    start = level = None
    for i, (line, code) in enumerate(zip(lines, in_code(lines))):
        if code:
            continue
        h = heading(line)
        if not h:
            continue
        lvl, text = h[0], h[1].strip().lower()
        if start is None and text == want:
            start, level = i, lvl
        elif start is not None and lvl <= (level or 6):
            return "\n".join(lines[start:i]).strip("\n")
    if start is None:
        return None
    return "\n".join(lines[start:]).strip("\n")


def lines3(text: str) -> list[str]:
    """A text's lines with their ends, as a three-way merge (``merge3``) takes them."""
    return text.splitlines(keepends=True)


def pick3(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """One value merged three ways: theirs when ours kept the base, ours when theirs kept it (or
    both made the same change); ours and True (a conflict) when both changed it differently."""
    if ours == base:
        return theirs, False
    return ours, theirs not in (base, ours)


def marked3(base: str, ours: str, theirs: str, names: tuple[str, str, str]) -> str:
    """The three-way merge of texts with conflict markers (``names``: ours, theirs, the base)."""
    import merge3

    m = merge3.Merge3(lines3(base), lines3(ours), lines3(theirs))
    return "".join(m.merge_lines(name_a=names[0], name_b=names[1], name_base=names[2], base_marker="|||||||"))


# a URL's query as libpq reads it: ``?`` then a keyword and ``=`` (``?sslmode=require``)
_URL_QUERY = re.compile(r"\?[A-Za-z_]+=")


def url_userinfo(url: str) -> str:
    """The user information of a URL (between ``://`` and its last ``@`` before the query);
    "" when there is none. A password may hold ``/``, ``?``, ``#`` or ``@`` written as it is:
    the query starts at ``?keyword=`` after the first ``@`` (when one comes before any ``/``,
    where libpq ends the user information) or anywhere (when none does)."""
    rest = url.partition("://")[2]
    at, slash = rest.find("@"), rest.find("/")
    start = at if at != -1 and (slash == -1 or at < slash) else 0
    q = _URL_QUERY.search(rest, start)
    return rest[:q.start() if q else len(rest)].rpartition("@")[0]


def redact_userinfo(url: str) -> str:
    """``url`` with the password of its user information masked: ``postgresql://user:***@host/db``;
    a user information that is not a plain ``user:password`` or ``user`` is masked whole
    (``***@host``)."""
    info = url_userinfo(url)
    if not info:
        return url
    user, colon, _ = info.partition(":")
    if colon and not set(user) & set("/?#@"):
        shown = f"{user}:***"
    elif set(info) & set(":/?#@"):
        shown = "***"
    else:
        shown = info
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{shown}{rest[len(info):]}"
