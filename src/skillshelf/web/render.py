"""Turning skill text into safe HTML, and numbers into small inline SVG charts.

Skills are third-party text. Markdown is rendered by markdown-it-py with raw HTML off (a
``<script>`` in a body stays text), code blocks are highlighted by pygments (class names
only, no inline styles), links and images are rewritten by our own renderer, and the result
is sanitized by nh3 with an allow-list of tags and attributes and only http, https and
mailto link schemes (``javascript:`` links lose their href). Everything else a page shows is
autoescaped by Jinja2.
"""

from __future__ import annotations

import functools
import posixpath
from html import escape
from typing import Any
from urllib.parse import quote, urlsplit

import nh3
from markdown_it import MarkdownIt
from pygments import highlight as _pyg_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

HIGHLIGHT_MAX = 60_000        # characters of one code block highlighted; longer ones stay plain
_FORMATTER = HtmlFormatter(nowrap=True, classprefix="tok-")
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
        "span", "em", "strong", "del", "s", "a", "table", "thead", "tbody", "tr", "th", "td", "sup", "sub", "kbd"}
ATTRIBUTES = {"a": {"href", "title", "class"}, "span": {"class"}, "code": {"class"}, "pre": {"class"},
              "ol": {"start"}, "h1": {"id"}, "h2": {"id"}, "h3": {"id"}, "h4": {"id"}}
SCHEMES = {"http", "https", "mailto"}


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    lang = (lang or "").strip().split()[0] if (lang or "").strip() else ""
    if not lang or len(code) > HIGHLIGHT_MAX:
        return ""       # markdown-it escapes the block itself
    try:
        lexer = get_lexer_by_name(lang, stripnl=False, ensurenl=False)
    except (ClassNotFound, ValueError):
        return ""
    html = _pyg_highlight(code, lexer, _FORMATTER)
    return f'<pre class="code"><code class="language-{escape(lang, quote=True)}">{html}</code></pre>\n'


def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False,
                                   "highlight": _highlight})
    md.enable(["table", "strikethrough"])

    def image(self, tokens, idx, options, env):
        # no remote images (tracking, and the CSP would block them): a link instead
        tok = tokens[idx]
        src = str(tok.attrGet("src") or "")
        alt = "".join(c.content for c in (tok.children or [])) or src
        href = _href(src, env)
        return f'<a class="img-link" href="{escape(href, quote=True)}">image: {escape(alt)}</a>' if href \
            else f"[image: {escape(alt)}]"

    def link_open(self, tokens, idx, options, env):
        tok = tokens[idx]
        href = _href(str(tok.attrGet("href") or ""), env)
        title = tok.attrGet("title")
        attrs = f' href="{escape(href, quote=True)}"' if href else ""
        if title:
            attrs += f' title="{escape(str(title), quote=True)}"'
        return f"<a{attrs}>"

    md.add_render_rule("image", image)
    md.add_render_rule("link_open", link_open)
    return md


def _href(href: str, env: dict) -> str:
    """A link target a page may carry: http(s)/mailto as they are, an in-page anchor, or a
    path relative to the skill folder turned into the dashboard's file view; anything else
    (javascript:, data:, file:, paths leaving the folder) becomes no link."""
    href = href.strip()
    if not href:
        return ""
    parts = urlsplit(href)
    if parts.scheme:
        return href if parts.scheme.lower() in SCHEMES else ""
    if href.startswith("#"):
        return href
    if href.startswith("/") or parts.netloc:
        return ""
    skill = env.get("skill_id")
    if not skill:
        return ""
    path = posixpath.normpath(parts.path)
    if path.startswith("..") or path in (".", ""):
        return ""
    return f"/file/{quote(skill, safe='/:')}?path={quote(path, safe='/')}"


_MD = _md()


@functools.lru_cache(maxsize=512)
def markdown(text: str, skill_id: str = "") -> str:
    """Sanitized HTML for a Markdown body (cached by text: a page view re-renders nothing)."""
    html = _MD.render(text or "", {"skill_id": skill_id})
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=SCHEMES,
                     link_rel="noopener noreferrer nofollow", strip_comments=True)


@functools.lru_cache(maxsize=128)
def code(text: str, filename: str) -> str:
    """Highlighted HTML for a text file by its name (plain and escaped when no lexer fits)."""
    from pygments.lexers import get_lexer_for_filename

    if len(text) <= HIGHLIGHT_MAX:
        try:
            lexer = get_lexer_for_filename(filename, stripnl=False, ensurenl=False)
            html = _pyg_highlight(text, lexer, _FORMATTER)
            return nh3.clean(f'<pre class="code"><code>{html}</code></pre>', tags=TAGS, attributes=ATTRIBUTES,
                             url_schemes=SCHEMES)
        except ClassNotFound:
            pass
    return f'<pre class="code"><code>{escape(text)}</code></pre>'


def pygments_css() -> str:
    """Token colours for light and dark schemes (served as a static stylesheet)."""
    from pygments.styles import get_style_by_name

    light = HtmlFormatter(classprefix="tok-", style=get_style_by_name("friendly")).get_style_defs(".code")
    dark = HtmlFormatter(classprefix="tok-", style=get_style_by_name("github-dark")).get_style_defs(".code")
    def strip(css: str) -> str:     # token colours only: backgrounds and line numbers come from app.css
        keep = []
        for line in css.splitlines():
            sel = line.split("{")[0].strip()
            if sel.startswith(".code .tok-") and "hll" not in sel:
                keep.append(line)
        return "\n".join(keep)

    return f"{strip(light)}\n@media (prefers-color-scheme: dark) {{\n{strip(dark)}\n}}\n"


# --- charts -------------------------------------------------------------------------------

def bars(points: list[dict], key: str, *, label: str = "day", width: int = 300, height: int = 64,
         percent: bool = False) -> dict[str, Any]:
    """Geometry of a small bar chart of ``points[i][key]`` (None: no data, drawn as a gap).
    Percent charts run 0..1; others 0..max."""
    values = [p.get(key) for p in points]
    present = [v for v in values if v is not None]
    top = 1.0 if percent else max([v for v in present if v] or [1])
    n = max(len(values), 1)
    step = width / n
    gap = 1 if step > 4 else 0
    out = []
    for i, (p, v) in enumerate(zip(points, values)):
        h = 0.0 if not v else max(1.5, (float(v) / top) * (height - 2))
        shown = "no data" if v is None else (f"{v:.0%}" if percent else f"{v:,}")
        out.append({"x": round(i * step, 2), "y": round(height - h, 2), "w": round(max(step - gap, 1), 2),
                    "h": round(h, 2), "title": f"{p.get(label)}: {shown}", "empty": v is None})
    last = next((v for v in reversed(values) if v is not None), None)
    return {"bars": out, "width": width, "height": height, "max": top, "last": last,
            "total": sum(present) if not percent else None,
            "first_label": points[0].get(label) if points else "", "last_label": points[-1].get(label) if points else ""}
