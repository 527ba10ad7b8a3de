"""The ``Skill`` value: parse, render and validate ``SKILL.md``.

Reading is lenient: anything with a YAML mapping and a description is usable,
and every deviation from the Agent Skills spec is reported as a finding.
Writing is strict: :func:`validate_for_write` must return no errors before the
project writes a file.

Severities, from worst:
  ``fatal``   the file cannot be used at all (no frontmatter, bad YAML, no description)
  ``error``   the file breaks the spec (a strict validator rejects it) but is indexed
  ``warning`` likely a mistake, indexed anyway
  ``info``    worth knowing (CRLF, BOM, long body)
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import yaml

from .errors import SkillFormatError
from .text import yaml_text

SKILL_TYPES = ("IMPLEMENTATION", "WORKFLOW", "TROUBLESHOOTING", "ARCHITECTURE", "RULE")
SPEC_KEYS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
# Skills Lab's own keys; they live under ``metadata`` as strings so files stay valid.
SEED_KEYS = ("skill-type", "repo", "version", "tags", "created", "last-modified", "ttl-days",
             "author", "source", "display-name")
# the metadata keys a library keeps of its own copy of a skill (its version number, dates, lineage and
# lifecycle): a merge of upstream's change into a copy never sets them (``supply.upstream_merge``,
# ``evolution.changes``)
OWN_KEYS = ("version", "created", "last-modified", "origin", "origin-gone", "derived-from", "lineage", "merged-from",
            "status", "status-reason", "merged-into", "ttl-days")
# a copy's ``metadata.origin-gone``: what upstream did to the skill its ``origin`` names (renamed it,
# removed it), said plainly; a copy with it is not merged with upstream any more
ORIGIN_GONE = "origin-gone"
# the spec's top-level keys an upstream merge moves into a copy: key -> the ``Skill`` field
UPSTREAM_TOP = {"license": "license", "compatibility": "compatibility", "allowed-tools": "allowed_tools"}
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
LONG_BODY_LINES = 500
# libyaml's safe loader when present (≈10× faster); same safe semantics, except that
# timestamps stay text: `created: 2024-13-45` is a bad date, not a crash, and a good date
# reads the same either way (the metadata map holds strings).
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    pass


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _BaseLoader.construct_yaml_str)
# What one frontmatter may expand to: a few hundred bytes of nested aliases ("billion
# laughs") would otherwise become gigabytes when turned into text.
MAX_FRONTMATTER_BYTES = 64_000
MAX_ALIASES = 64
MAX_NODES = 10_000
MAX_DEPTH = 20
MAX_VERSION = 1_000_000_000
MAX_TTL_DAYS = 36_500
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
SEVERITIES = ("fatal", "error", "warning", "info")


_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


def _strings(value: Any):
    """Every string (keys and values) inside a frontmatter value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


@dataclass(frozen=True)
class Finding:
    severity: str
    rule: str
    message: str
    line: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Skill:
    """One skill: frontmatter fields plus the Markdown body."""

    name: str
    description: str
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # unknown keys, kept on round trip

    # --- Skills Lab metadata, read from ``metadata`` -------------------------------
    def meta(self, key: str, default: str | None = None) -> str | None:
        return self.metadata.get(key, default)

    @property
    def skill_type(self) -> str | None:
        value = self.metadata.get("skill-type")
        return value.upper() if value else None

    @property
    def tags(self) -> list[str]:
        return split_tags(self.metadata.get("tags", ""))

    @property
    def version(self) -> int:
        return parse_version(self.metadata.get("version")) or 1

    @property
    def repo(self) -> str | None:
        return self.metadata.get("repo") or None

    @property
    def ttl_days(self) -> int | None:
        return parse_ttl(self.metadata.get("ttl-days"))

    @property
    def display_name(self) -> str:
        return self.metadata.get("display-name") or self.name

    def expires_on(self) -> _dt.date | None:
        """The expiry date: last-modified (or created) + ttl-days; None without a TTL."""
        ttl = self.ttl_days
        if not ttl:
            return None
        start = parse_date(self.metadata.get("last-modified") or self.metadata.get("created"))
        if start is None:
            return None
        try:
            return start + _dt.timedelta(days=ttl)
        except OverflowError:  # past year 9999
            return _dt.date.max

    def with_metadata(self, **changes: str | None) -> "Skill":
        """A copy with metadata keys set (``_`` in a key becomes ``-``); None removes a key."""
        meta = dict(self.metadata)
        for key, value in changes.items():
            key = key.replace("_", "-")
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = str(value)
        return dataclasses.replace(self, metadata=meta)

    def replace(self, **changes: Any) -> "Skill":
        return dataclasses.replace(self, **changes)

    # --- rendering --------------------------------------------------------------
    def frontmatter(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.license:
            data["license"] = self.license
        if self.compatibility:
            data["compatibility"] = self.compatibility
        if self.allowed_tools:
            data["allowed-tools"] = self.allowed_tools
        if self.metadata:
            data["metadata"] = dict(self.metadata)
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def render(self) -> str:
        """The SKILL.md text (LF line endings, UTF-8, no BOM)."""
        fm = self.frontmatter()
        # YAML reads NEL and the Unicode line/paragraph separators as line breaks: a value
        # holding one is written with escapes (\x85, \u2028) so that it reads back as it was
        raw = not any(ch in text for text in _strings(fm) for ch in _YAML_BREAKS)
        head = yaml.safe_dump(fm, sort_keys=False, allow_unicode=raw, width=100000, default_flow_style=False)
        body = self.body.strip("\n")
        return f"---\n{head}---\n\n{body}\n" if body else f"---\n{head}---\n"


@dataclass
class ParsedFile:
    """The result of reading one SKILL.md: the skill (None when fatal) and the findings."""

    skill: Skill | None
    findings: list[Finding]

    @property
    def usable(self) -> bool:
        return self.skill is not None

    @property
    def worst(self) -> str | None:
        for sev in SEVERITIES:
            if any(f.severity == sev for f in self.findings):
                return sev
        return None

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity in ("fatal", "error")]


def split_tags(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
    else:
        items = re.split(r"[,\n]", str(value or ""))
    seen: list[str] = []
    for item in items:
        tag = item.strip().strip("[]'\"").strip().lower()
        if tag and tag not in seen:
            seen.append(tag)
    return seen


def _small_int(value: Any, low: int, high: int) -> int | None:
    """An integer in [low, high] from text like '3' or '3.1', else None (never a huge int)."""
    text = str(value if value is not None else "").strip().split(".")[0]
    if not text or len(text) > 12 or not text.isascii() or not text.isdigit():
        return None
    n = int(text)
    return n if low <= n <= high else None


def parse_version(value: Any) -> int | None:
    return _small_int(value, 1, MAX_VERSION)


def parse_ttl(value: Any) -> int | None:
    return _small_int(value, 1, MAX_TTL_DAYS)


def parse_date(value: Any) -> _dt.date | None:
    if not value:
        return None
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None


def _scalar_to_str(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):   # as written (a template's `name: [TODO: ...]`), never a repr
        return yaml_text(value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _alias_count(head: str) -> int:
    """How many alias nodes (``*name``) the YAML text holds, counted on the event stream
    (nothing is constructed)."""
    n = 0
    for event in yaml.parse(head, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            n += 1
            if n > MAX_ALIASES:
                break
    return n


def _too_complex(data: Any) -> str | None:
    """Why ``data`` is too deep, too big or self-referential to turn into text, or None.
    Walked as the tree it would expand to, with a node budget, so shared subtrees count
    every time they are used."""
    budget = MAX_NODES
    stack: list[tuple[Any, int, tuple[int, ...]]] = [(data, 0, ())]
    while stack:
        value, depth, path = stack.pop()
        budget -= 1
        if budget < 0:
            return f"over {MAX_NODES:,} values once its aliases are expanded"
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(value, (dict, list, tuple)):
            if id(value) in path:
                return "self-referential (a recursive alias)"
            inner = (*path, id(value))
            items = list(value.keys()) + list(value.values()) if isinstance(value, dict) else value
            stack.extend((v, depth + 1, inner) for v in items)
    return None


_FRONT_RE = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", re.S)


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """Return (frontmatter text or None, body, line number where the body starts)."""
    m = _FRONT_RE.match(text)
    if not m:
        return None, text, 1
    head = m.group(1) or ""
    body_line = text[: m.end()].count("\n") + 1
    return head, text[m.end():], body_line


# a block-style mapping key at the start of a line: "quoted", 'quoted' or plain (not a list
# item, a comment, a flow collection or another YAML indicator), then ':' and a space or the end
_KEY_RE = re.compile(r"""( *)(?:"([^"\n]*)"[ \t]*|'([^'\n]*)'[ \t]*|(?!- )([^\s#'"{\[&*!|>%@`][^:\n]*)):(?:[ \t]|$)""")


def _key(m: re.Match) -> str:
    return next(g for g in m.groups()[1:] if g is not None).rstrip()


def key_lines(head: str) -> tuple[dict[str, int], dict[str, int]]:
    """The file line of each top-level frontmatter key, and of each key directly under
    ``metadata:`` (line 1 is the opening ``---``). Block-style keys only: a key written
    another way (a flow mapping, a complex key) is simply not found. A key given twice is at
    its last line, the one the YAML loader keeps. Linear in the text; YAML is not parsed again."""
    top: dict[str, int] = {}
    meta: dict[str, int] = {}
    in_meta = in_block = False          # under "metadata:"; inside a top-level key's | or > text
    meta_indent: int | None = None
    for i, line in enumerate(head.split("\n")):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if in_block:
            if not stripped or indent > 0:
                continue
            in_block = False
        if not stripped or stripped.startswith("#"):
            continue
        m = _KEY_RE.match(line)
        if indent == 0:
            in_meta = False
            if m is None:
                continue
            key = _key(m)
            top[key] = i + 2
            rest = line[m.end():].split(" #", 1)[0].strip()
            in_block = rest.startswith(("|", ">"))
            in_meta, meta_indent = key == "metadata" and not rest, None
        elif in_meta and m is not None:
            if meta_indent is None:
                meta_indent = indent
            if indent == meta_indent:
                meta[_key(m)] = i + 2
    return top, meta


def _shown_char(c: str) -> str:
    if c == " ":
        return "spaces"
    if c == "_":
        return "underscores"
    if c.isprintable():
        return repr(c)
    return f"U+{ord(c):04X}"


def check_name(name: str) -> list[tuple[str, str]]:
    """Spec problems with a name, as (rule, message) pairs, every one found (a name can have
    capitals and a space at once); empty when valid."""
    problems: list[tuple[str, str]] = []
    if not name:
        return [("name.empty", "name is empty")]
    if len(name) > MAX_NAME:
        problems.append(("name.too-long", f"name is {len(name)} characters; the limit is {MAX_NAME}"))
    if NAME_RE.match(name):
        return problems
    if name != name.lower():
        problems.append(("name.case", f"name {name!r} has uppercase letters; use lowercase a-z, 0-9 and '-'"))
    others = list(dict.fromkeys(c for c in name.lower() if not (c.isascii() and (c.isalnum() or c == "-"))))
    if others:
        shown = ", ".join(_shown_char(c) for c in others[:5]) + (", …" if len(others) > 5 else "")
        problems.append(("name.chars",
                         f"name {name!r} holds {shown}; a name may only hold a-z, 0-9 and single hyphens"))
    if "--" in name or name.startswith("-") or name.endswith("-"):
        problems.append(("name.hyphens", f"name {name!r} has a leading, trailing or double hyphen"))
    return problems


def _seed_key(key: str) -> str:
    return key.replace("_", "-").lower()


def _key_finding(key: str, line: int | None) -> Finding:
    """The finding for a top-level key the spec does not define."""
    if _seed_key(key) in SEED_KEYS:
        return Finding("error", "keys.seed-top-level",
                       f"'{key}' belongs under 'metadata:' as a string; it is read from the top level", line)
    return Finding("error", "keys.unknown", f"unknown frontmatter key '{key}'; the spec allows {', '.join(SPEC_KEYS)}",
                   line)


_PLAIN_SCALAR = re.compile(r"^[^\s#'\"{\[&*!|>%@`,?:-][^#]*$|^-[^\s#][^#]*$")


def _name_on_line(line: str) -> str | None:
    """The value of a ``name: value`` line when it is a plain or fully quoted scalar, else
    None (a value YAML would read some other way is not guessed at)."""
    value = line.split(":", 1)[1].strip() if ":" in line else ""
    if len(value) >= 2 and value[0] == value[-1] == "'":
        inner = value[1:-1]
        return None if "'" in inner.replace("''", "") else inner.replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        inner = value[1:-1]
        return None if "\\" in inner or '"' in inner else inner
    value = value.split(" #", 1)[0].rstrip()
    if not value or ": " in value or not _PLAIN_SCALAR.match(value):
        return None
    return value


def scan_frontmatter(head: str, folder_name: str | None = None) -> list[Finding]:
    """What a line scan can still tell of a frontmatter the YAML loader refused: the name's
    problems (when its value is a plain scalar), a missing name or description, keys the
    spec does not define. Block-style keys only; linear in the text."""
    findings: list[Finding] = []
    try:
        top, _ = key_lines(head)
    except re.error:   # pragma: no cover - the patterns are fixed
        return findings
    lines = head.split("\n")
    if "name" not in top:
        findings.append(Finding("error", "name.missing", "no name; add 'name: <folder name>'", 2))
    else:
        line = top["name"]
        name = _name_on_line(lines[line - 2])
        if name is not None:
            name = unicodedata.normalize("NFKC", name.strip())
            for rule, message in check_name(name):
                findings.append(Finding("error", rule, message, line))
            if folder_name is not None and name and unicodedata.normalize("NFKC", folder_name) != name:
                findings.append(Finding("error", "name.folder-mismatch",
                                        f"name {name!r} differs from its folder {folder_name!r}; rename one to match",
                                        line))
    if "description" not in top:
        findings.append(Finding("error", "description.missing",
                                "no description; add 'description: what it does and when to use it'", 2))
    for key, line in top.items():
        if key not in SPEC_KEYS:
            findings.append(_key_finding(key, line))
    return findings


def parse(text: str | bytes, *, folder_name: str | None = None) -> ParsedFile:
    """Parse SKILL.md text leniently. Never raises for bad content: see the findings."""
    findings: list[Finding] = []
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            return ParsedFile(None, [Finding("fatal", "encoding.utf8",
                                             f"not UTF-8 (byte {exc.start}); save the file as UTF-8")])
    if text.startswith("\ufeff"):
        findings.append(Finding("info", "encoding.bom", "file starts with a byte-order mark", 1))
        text = text[1:]
    if "\r\n" in text or "\r" in text:
        findings.append(Finding("info", "encoding.crlf", "file uses CRLF line endings", 1))
        text = text.replace("\r\n", "\n").replace("\r", "\n")

    head, body, _ = split_frontmatter(text)
    if head is None:
        if text.split("\n", 1)[0].rstrip() == "---":
            # it opens one: the closing line is what is missing
            return ParsedFile(None, findings + [Finding(
                "fatal", "frontmatter.unclosed",
                "the frontmatter opened on line 1 is never closed: add a line '---' after its last field", 1)])
        return ParsedFile(None, findings + [Finding(
            "fatal", "frontmatter.missing",
            "no YAML frontmatter; the file must start with '---', the fields, and '---'", 1)])
    if len(head) > MAX_FRONTMATTER_BYTES:
        return ParsedFile(None, findings + [Finding(
            "fatal", "frontmatter.too-large",
            f"frontmatter is {len(head):,} characters; the limit is {MAX_FRONTMATTER_BYTES:,}", 2)])
    try:
        if "*" in head and _alias_count(head) > MAX_ALIASES:
            return ParsedFile(None, findings + scan_frontmatter(head, folder_name) + [Finding(
                "fatal", "yaml.aliases", f"frontmatter uses more than {MAX_ALIASES} YAML aliases; "
                                         "write the values out instead of referring to anchors", 2)])
        data = yaml.load(head, Loader=_Loader) if head.strip() else {}
        problem = _too_complex(data)
        if problem:
            return ParsedFile(None, findings + scan_frontmatter(head, folder_name) + [Finding(
                "fatal", "yaml.too-complex", f"frontmatter is {problem}; use plain keys and short values", 2)])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = (mark.line + 2) if mark is not None else None  # +1 for 1-based, +1 for the opening '---'
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        fix = ("indent with spaces, not tabs" if "tab" in reason
               else "quote values that contain ': ' or start with special characters")
        return ParsedFile(None, findings + scan_frontmatter(head, folder_name) + [Finding(
            "fatal", "yaml.invalid", f"frontmatter is not valid YAML: {reason}; {fix}", line)])
    except Exception as exc:  # noqa: BLE001 — a safe loader's constructors only fail on content
        # a constructor refused a value (an unhashable key, a bad !!int, `!!float ''` raising
        # IndexError inside PyYAML): bad content, reported, never a crash of sync or validate
        return ParsedFile(None, findings + scan_frontmatter(head, folder_name) + [Finding(
            "fatal", "yaml.invalid", f"frontmatter is not valid YAML: {type(exc).__name__}: {str(exc)[:200]}", 2)])
    if not isinstance(data, dict):
        return ParsedFile(None, findings + [Finding(
            "fatal", "frontmatter.not-mapping", "frontmatter must be a mapping of keys to values", 2)])

    data = {str(k): v for k, v in data.items()}
    # a finding about a key is reported at that key's line (found only when there is a finding:
    # line 2, where the fields start, when the key is missing or written in another style)
    lines: list[tuple[dict[str, int], dict[str, int]]] = []

    def at(key: str, under_metadata: bool = False) -> int:
        if not lines:
            lines.append(key_lines(head))
        top, meta = lines[0]
        return (meta.get(key) or top.get("metadata", 2)) if under_metadata else top.get(key, 2)

    description = data.get("description")
    # without a description the file cannot be used, but the rest is still checked: every
    # problem is named at once (the fatal finding comes last)
    missing: Finding | None = None
    if description is None or (isinstance(description, str) and not description.strip()):
        missing = Finding("fatal", "description.missing",
                          "no description; add 'description: what it does and when to use it'", at("description"))
        description = ""
    elif not isinstance(description, str):
        findings.append(Finding("warning", "description.type", "description is not a string", at("description")))
        description = _scalar_to_str(description)
    if "\n" in description.strip():
        findings.append(Finding("info", "description.multiline", "description spans several lines",
                                at("description")))
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        findings.append(Finding("error", "description.too-long",
                                f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION}",
                                at("description")))

    raw_name = data.get("name")
    if raw_name is None or not str(raw_name).strip():
        findings.append(Finding("error", "name.missing",
                                "no name; the folder name is used. Add 'name: <folder name>'", at("name")))
        name = folder_name or ""
    else:
        name = unicodedata.normalize("NFKC", _scalar_to_str(raw_name).strip())
        for rule, message in check_name(name):
            findings.append(Finding("error", rule, message, at("name")))
        if folder_name is not None and unicodedata.normalize("NFKC", folder_name) != name:
            findings.append(Finding("error", "name.folder-mismatch",
                                    f"name {name!r} differs from its folder {folder_name!r}; rename one to match",
                                    at("name")))

    metadata: dict[str, str] = {}
    raw_meta = data.get("metadata")
    if raw_meta is not None:
        if isinstance(raw_meta, dict):
            for k, v in raw_meta.items():
                if not isinstance(v, str):
                    findings.append(Finding("warning", "metadata.not-string",
                                            f"metadata.{k} is not a string; it is read as text", at(str(k), True)))
                metadata[str(k)] = _scalar_to_str(v)
        else:
            findings.append(Finding("error", "metadata.not-mapping", "metadata must be a mapping of strings",
                                    at("metadata")))

    # a Skills Lab key read from the top level: its findings point there
    from_top: dict[str, str] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key in SPEC_KEYS:
            continue
        seed_key = _seed_key(key)
        findings.append(_key_finding(key, at(key)))
        if seed_key in SEED_KEYS:
            if seed_key not in metadata:
                metadata[seed_key] = _scalar_to_str(value)
                from_top[seed_key] = key
        else:
            extra[key] = value

    def meta_at(key: str) -> int:
        return at(from_top[key]) if key in from_top else at(key, True)

    if metadata.get("version") not in (None, "") and parse_version(metadata["version"]) is None:
        findings.append(Finding("warning", "metadata.version",
                                f"version {metadata['version'][:40]!r} is not a number from 1 to {MAX_VERSION:,};"
                                " it is read as 1", meta_at("version")))
    if metadata.get("ttl-days") not in (None, "") and parse_ttl(metadata["ttl-days"]) is None:
        findings.append(Finding("warning", "metadata.ttl-days",
                                f"ttl-days {metadata['ttl-days'][:40]!r} is not a number of days from 1 to "
                                f"{MAX_TTL_DAYS:,}; the skill is read as never expiring", meta_at("ttl-days")))
    for key in ("created", "last-modified"):
        if metadata.get(key) and parse_date(metadata[key]) is None:
            findings.append(Finding("warning", f"metadata.{key}",
                                    f"{key} {metadata[key][:40]!r} is not a date (YYYY-MM-DD)", meta_at(key)))
    st = metadata.get("skill-type")
    if st and st.upper() not in SKILL_TYPES:
        findings.append(Finding("warning", "metadata.skill-type",
                                f"skill-type {st!r} is not one of {', '.join(SKILL_TYPES)}",
                                meta_at("skill-type")))

    def _opt(key: str) -> str | None:
        v = data.get(key)
        if v is None:
            return None
        if isinstance(v, (list, tuple)) and key == "allowed-tools":
            return " ".join(str(x) for x in v)
        return _scalar_to_str(v)

    compatibility = _opt("compatibility")
    if compatibility and len(compatibility) > MAX_COMPATIBILITY:
        findings.append(Finding("error", "compatibility.too-long",
                                f"compatibility is {len(compatibility)} characters; the limit is {MAX_COMPATIBILITY}",
                                at("compatibility")))
    if body.count("\n") > LONG_BODY_LINES:
        findings.append(Finding("info", "body.long",
                                f"body has {body.count(chr(10))} lines; the spec advises under {LONG_BODY_LINES}"))

    if missing is not None:
        return ParsedFile(None, findings + [missing])
    skill = Skill(name=name, description=description, body=body.strip("\n"),
                  license=_opt("license"), compatibility=compatibility,
                  allowed_tools=_opt("allowed-tools"), metadata=metadata, extra=extra)
    return ParsedFile(skill, findings)


def parse_strict(text: str, *, folder_name: str | None = None, path: str | None = None) -> Skill:
    """Parse and raise :class:`SkillFormatError` on a fatal finding."""
    parsed = parse(text, folder_name=folder_name)
    if parsed.skill is None:
        f = parsed.findings[-1]
        raise SkillFormatError(f.message, path=path, line=f.line)
    return parsed.skill


def validate_for_write(skill: Skill, folder_name: str | None = None, *,
                       keep_unknown_keys: bool = False) -> list[Finding]:
    """Strict checks for anything the project writes. Returns error findings (empty = valid).
    ``keep_unknown_keys``: the skill's unknown frontmatter keys came from the file being
    changed (a FIX keeps every key of the original); they are not new errors."""
    errors: list[Finding] = []
    for rule, message in check_name(skill.name):
        errors.append(Finding("error", rule, message))
    if folder_name is not None and folder_name != skill.name:
        errors.append(Finding("error", "name.folder-mismatch", f"name {skill.name!r} differs from folder {folder_name!r}"))
    if not skill.description.strip():
        errors.append(Finding("error", "description.missing", "description is empty"))
    if "\r" in skill.body:
        errors.append(Finding("error", "body.carriage-return", "the body holds a carriage return (CR); "
                                                              "use LF line endings"))
    if len(skill.description) > MAX_DESCRIPTION:
        errors.append(Finding("error", "description.too-long",
                              f"description is {len(skill.description)} characters; the limit is {MAX_DESCRIPTION}"))
    if skill.compatibility and len(skill.compatibility) > MAX_COMPATIBILITY:
        errors.append(Finding("error", "compatibility.too-long", "compatibility is over 500 characters"))
    if skill.extra and not keep_unknown_keys:
        errors.append(Finding("error", "keys.unknown", f"unknown keys: {', '.join(skill.extra)}"))
    st = skill.metadata.get("skill-type")
    if st and st not in SKILL_TYPES:
        errors.append(Finding("error", "metadata.skill-type", f"skill-type must be one of {', '.join(SKILL_TYPES)}"))
    # Round trip: what we render must parse back to the same skill with no errors.
    reparsed = parse(skill.render(), folder_name=folder_name)
    ignored = {"keys.unknown"} if keep_unknown_keys else set()
    if reparsed.skill is None:
        errors.extend(f for f in reparsed.findings if f.severity == "fatal")
    errors.extend(f for f in reparsed.errors() if f not in errors and f.rule not in ignored)
    return errors
