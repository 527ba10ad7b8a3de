"""Config files of agent clients as text: read (JSON, JSON with comments, TOML, YAML) with
one clear error naming the file, and written back with one entry changed.

In TOML and YAML the change is made on the text, so comments and layout survive, and kept
only when the result parses to exactly the intended data; otherwise the file is written from
its data and the caller is told that comments were not kept. JSON is written with the file's
own indentation. PyYAML and tomli_w are imported when a file of their format is handled.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import ConfigError


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON. One pass
    over the text, aware of strings; what is not a comment is left byte for byte."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    plain = "".join(out)
    return re.sub(r",(\s*[}\]])", r"\1", plain)


def _json_indent(text: str) -> int | str:
    m = re.search(r"\n([ \t]+)\S", text)
    if not m:
        return 2
    ws = m.group(1)
    return "\t" if ws.startswith("\t") else len(ws)


def parse(fmt: str, text: str, path: Path, *, jsonc: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The file's data (a mapping) and notes; ConfigError naming the file and the fix."""
    fix = f"fix {path} (or move it aside) and run the command again; nothing was written"
    notes: list[str] = []
    if not text.strip():
        return {}, notes
    try:
        if fmt == "json":
            try:
                data = json.loads(text, object_pairs_hook=_no_duplicates)
            except json.JSONDecodeError:
                if not jsonc:
                    raise
                data = json.loads(strip_jsonc(text), object_pairs_hook=_no_duplicates)
                notes.append(f"comments and trailing commas in {path} are not kept (the backup has them)")
        elif fmt == "toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            import yaml

            data = yaml.load(text, Loader=_strict_yaml_loader())  # noqa: S506 (a SafeLoader subclass)
    except _DuplicateKey as exc:
        raise ConfigError(f"{path} has the key {str(exc)!r} twice in one object", fix=fix) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                          fix=fix) from None
    except ValueError as exc:   # tomllib.TOMLDecodeError
        raise ConfigError(f"{path} is not valid TOML ({exc})", fix=fix) from None
    except Exception as exc:    # yaml.YAMLError and its subclasses
        if type(exc).__module__.startswith("yaml"):
            where = getattr(exc, "problem_mark", None)
            at = f"line {where.line + 1}, column {where.column + 1}: " if where is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(f"{path} is not valid YAML ({at}{problem})", fix=fix) from None
        raise
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds a {type(data).__name__}, not an object of settings", fix=fix)
    return data, notes


_YAML_LOADER: Any = None


def _strict_yaml_loader() -> Any:
    """A safe YAML loader that refuses a key repeated in one mapping (PyYAML would keep the
    last one silently; the client's own parser may refuse the file)."""
    global _YAML_LOADER
    if _YAML_LOADER is None:
        import yaml

        class Strict(yaml.SafeLoader):  # type: ignore[misc]
            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                seen = set()
                for key_node, _ in node.value:
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        if key in seen:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"the key {key!r} appears twice", key_node.start_mark)
                        seen.add(key)
                    except TypeError:
                        pass
                return super().construct_mapping(node, deep=deep)

        _YAML_LOADER = Strict
    return _YAML_LOADER


def _dump(fmt: str, data: dict[str, Any], old_text: str) -> str:
    if fmt == "json":
        text = json.dumps(data, indent=_json_indent(old_text), ensure_ascii=False)
        return text + "\n"
    if fmt == "toml":
        import tomli_w

        return tomli_w.dumps(data)
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)


def _has_comments(fmt: str, text: str) -> bool:
    return fmt in ("toml", "yaml") and any(line.lstrip().startswith("#") or " #" in line
                                           for line in text.splitlines())


def _same(a: Any, b: Any) -> bool:
    """Equal data, where an empty server table counts as absent (a text edit that removes the
    last entry may leave no table at all)."""
    return _prune(a) == _prune(b)


def _prune(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _prune(v) for k, v in d.items() if not (isinstance(v, dict) and not v)}
    return d


# TOML: our table is edited on the text; the result must parse to exactly the intended data.

_TOML_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_key(raw: str) -> list[str]:
    return [p.strip().strip('"').strip("'") for p in raw.split(".")]


def _toml_block(key: str, name: str, entry: dict[str, Any]) -> str:
    import tomli_w

    text = tomli_w.dumps({key: {name: entry}})
    lines = text.splitlines()
    if lines and (head := _TOML_HEADER.match(lines[0])) and _toml_key(head.group(1)) == [key]:
        lines = lines[1:]   # an empty [mcp_servers] header would define the table twice
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "\n".join(lines) + "\n"


def _after_ours(out: list[str], at: int) -> bool:
    """Whether anything but blank lines follows where our table was."""
    return any(l.strip() for l in out[at:])


def _toml_edit(text: str, key: str, name: str, entry: dict[str, Any] | None) -> str:
    """The text with our ``[key.skillshelf]`` tables (and their sub-tables) replaced by
    ``entry`` (or removed when None); the rest of the file, comments included, untouched."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    at: int | None = None
    pending: list[str] = []    # comments and blank lines seen inside our table: they may belong to the next one
    for line in lines:
        m = _TOML_HEADER.match(line)
        if m:
            parts = _toml_key(m.group(1))
            ours = parts[:2] == [key, name]
            if ours:
                if at is None:
                    at = len(out)
                skipping, pending = True, []
                continue
            if skipping:
                out.extend(l for l in pending if l.strip())   # keep comments that lead into the next table
                skipping, pending = False, []
            out.append(line)
            continue
        if skipping:
            if not line.strip() or line.lstrip().startswith("#"):
                pending.append(line)
            continue
        out.append(line)
    if entry is None:
        body = "".join(out)
        return body.rstrip("\n") + "\n" if at is not None and body.strip() and not _after_ours(out, at) else body
    block = _toml_block(key, name, entry)
    if at is None:
        body = "".join(out)
        if body and not body.endswith("\n"):
            body += "\n"
        return body + ("\n" if body.strip() else "") + block
    before, after = "".join(out[:at]), "".join(out[at:])
    if before and not before.endswith("\n"):
        before += "\n"
    return before + block + ("\n" + after if after.strip() else after)


# YAML: the same, for ``extensions:`` → ``skillshelf:`` in a block mapping.

_YAML_TOP = re.compile(r"^([A-Za-z_][\w.-]*|'[^']*'|\"[^\"]*\")\s*:(\s*(#.*)?)?$")


def _yaml_edit(text: str, key: str, name: str, entry: dict[str, Any] | None) -> str | None:
    """The text with our ``key: skillshelf:`` block replaced (or removed), or None when the
    file is not laid out as a plain block mapping this edit understands."""
    import yaml

    lines = text.splitlines(keepends=True)

    def indent(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def content(line: str) -> bool:
        s = line.strip()
        return bool(s) and not s.startswith("#")

    top = [i for i, l in enumerate(lines) if indent(l) == 0 and content(l)
           and (m := _YAML_TOP.match(l.rstrip("\n"))) and m.group(1).strip("'\"") == key]
    rendered = yaml.safe_dump({name: entry}, sort_keys=False, allow_unicode=True,
                              default_flow_style=False) if entry is not None else ""
    if not top:
        if any(indent(l) == 0 and content(l) and re.match(rf"^['\"]?{re.escape(key)}['\"]?\s*:", l) for l in lines):
            return None      # `extensions: {}` or another inline form
        if entry is None:
            return text
        body = text if not text or text.endswith("\n") else text + "\n"
        return body + f"{key}:\n" + "".join("  " + l for l in rendered.splitlines(keepends=True))
    start = top[0]
    end = start + 1
    while end < len(lines) and not (content(lines[end]) and indent(lines[end]) == 0):
        end += 1
    children = [i for i in range(start + 1, end) if content(lines[i])]
    ind = indent(lines[children[0]]) if children else 2
    if ind == 0:
        return None
    ours = [i for i in children if indent(lines[i]) == ind
            and re.match(rf"^\s*['\"]?{re.escape(name)}['\"]?\s*:\s*(#.*)?$", lines[i].rstrip("\n"))]
    block = "".join(" " * ind + l for l in rendered.splitlines(keepends=True))
    if ours:
        s = ours[0]
        e = s + 1
        while e < end and not (content(lines[e]) and indent(lines[e]) <= ind):
            e += 1
        while e > s + 1 and not content(lines[e - 1]):   # blank lines and comments after it stay
            e -= 1
        return "".join(lines[:s]) + block + "".join(lines[e:])
    if entry is None:
        return text
    # at the end of the block, before the blank lines and comments that lead into the next key
    e = end
    while e > start + 1 and not content(lines[e - 1]):
        e -= 1
    head = "".join(lines[:e])
    if head and not head.endswith("\n"):
        head += "\n"
    return head + block + "".join(lines[e:])


def render(fmt: str, key: str, name: str, path: Path, old_text: str, new_data: dict[str, Any],
           entry: dict[str, Any] | None) -> tuple[str, list[str]]:
    """The new text of a file whose data becomes ``new_data`` by setting ``key.name`` to
    ``entry`` (or removing it when None): edited in place where that keeps comments and parses
    to exactly ``new_data``, else written from the data (saying when comments are lost)."""
    notes: list[str] = []
    if fmt in ("toml", "yaml") and old_text.strip():
        try:
            edited = _toml_edit(old_text, key, name, entry) if fmt == "toml" else \
                _yaml_edit(old_text, key, name, entry)
            if edited is not None:
                data, _ = parse(fmt, edited, path)
                if _same(data, new_data):
                    return edited, notes
        except ConfigError:
            pass
    text = _dump(fmt, new_data, old_text)
    if _has_comments(fmt, old_text):
        notes.append(f"comments in {path} are not kept: the file was rewritten from its data "
                     "(the backup has them)")
    return text, notes
