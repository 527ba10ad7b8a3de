"""A change writes only the keys it sets: the rest of a SKILL.md's frontmatter stays as it was
written (its order, quotes, comments, dates and keys at the top level).

``rewrite(text, skill)`` edits the YAML text of ``text`` in place where ``skill`` differs from
what ``text`` says: a changed value is written over the old one in the old one's quoting, a
key removed is cut with its line, a new key is added at the end of ``metadata:``. Positions
come from PyYAML's own node marks (no hand-rolled parsing). The result is parsed again and
must say exactly what ``skill`` says; when it does not (a flow mapping, an unusual layout),
the whole file is rendered instead (``Skill.render``), which is always correct.
"""

from __future__ import annotations

import itertools

import yaml

from .. import skill as skillmod

# the spec's top-level keys, as ``Skill`` fields
_TOP = (("name", "name"), ("description", "description"), ("license", "license"),
        ("compatibility", "compatibility"), ("allowed-tools", "allowed_tools"))
LINEAGE_KEYS = ("origin", "derived-from", "lineage", "merged-from")   # where a skill came from
_WIDE = 1 << 20


class _CannotEdit(Exception):
    """This layout is not edited in place: the file is rendered whole."""


def _plain_reads_as(value: str) -> bool:
    """Whether ``value`` written without quotes reads back as the same text, as text: a number
    or a date written plain is not a string, and metadata is a map of strings (a version
    written ``version: 3`` would be flagged ``metadata.not-string``), so those are quoted."""
    if not value or value != value.strip() or "\n" in value or "#" in value or ": " in value:
        return False
    try:
        got = yaml.safe_load(f"k: {value}\n")
    except yaml.YAMLError:
        return False
    if not isinstance(got, dict) or set(got) != {"k"}:
        return False
    return isinstance(got["k"], str) and got["k"] == value


def _scalar(value: str, style: str | None, quote: str) -> str:
    """``value`` as YAML: plain when the old value was plain (``style`` None) and it reads back
    as the same text, else in the old value's quotes (or the file's usual ones, ``quote``)."""
    if style is None and _plain_reads_as(value):
        return value
    q = style if style in ('"', "'") else quote
    out = yaml.safe_dump({"k": value}, default_style=q, allow_unicode=True, width=_WIDE)
    return out.split(": ", 1)[1].rstrip("\n")


def _new_scalar(value: str, quote: str) -> str:
    """A value for a key the file did not have: plain when it is text that reads back as text
    (not a number or a date), else quoted the way the file quotes."""
    try:
        plain_is_text = isinstance(yaml.safe_load(f"k: {value}\n").get("k"), str)
    except (yaml.YAMLError, AttributeError):
        plain_is_text = False
    return _scalar(value, None if plain_is_text else quote, quote)


def _line_start(head: str, i: int) -> int:
    return head.rfind("\n", 0, i) + 1


def _line_end(head: str, i: int) -> int:
    """The index after the line break that ends the line holding ``i - 1``."""
    if i > 0 and head[i - 1] == "\n":
        return i
    j = head.find("\n", i)
    return len(head) if j < 0 else j + 1


def _style(node: yaml.Node) -> str | None:
    return node.style if isinstance(node, yaml.ScalarNode) and node.style in ('"', "'") else None


def _edit_head(head: str, old: skillmod.Skill, new: skillmod.Skill) -> str:
    root = yaml.compose(head, Loader=yaml.SafeLoader) if head.strip() else None
    if root is None:
        raise _CannotEdit("empty frontmatter")
    if not isinstance(root, yaml.MappingNode) or root.flow_style:
        raise _CannotEdit("not a block mapping")
    top: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for k, v in root.value:
        if isinstance(k, yaml.ScalarNode):
            top[str(k.value)] = (k, v)
    meta_node = top.get("metadata", (None, None))[1]
    meta: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    if isinstance(meta_node, yaml.MappingNode):
        if meta_node.flow_style:
            raise _CannotEdit("metadata is a flow mapping")
        for k, v in meta_node.value:
            if isinstance(k, yaml.ScalarNode):
                meta[str(k.value)] = (k, v)
    elif meta_node is not None and not (isinstance(meta_node, yaml.ScalarNode) and meta_node.tag.endswith(":null")):
        raise _CannotEdit("metadata is not a mapping")
    # a Skills Lab key read from the top level (``parse``) is changed where it is written
    for key, pair in top.items():
        seed = key.replace("_", "-").lower()
        if key not in [t for t, _ in _TOP] and key != "metadata" and seed in skillmod.SEED_KEYS:
            meta.setdefault(seed, pair)
    styles = [_style(v) for _, v in list(meta.values()) + list(top.values())]
    quote = '"' if styles.count('"') > styles.count("'") else "'"

    edits: list[tuple[int, int, str]] = []

    def change(pair: tuple[yaml.Node, yaml.Node], value: str) -> None:
        k, v = pair
        end = v.end_mark.index
        tail = "\n" if end > 0 and head[end - 1] == "\n" else ""
        if isinstance(v, yaml.ScalarNode) and v.style in (None, "", '"', "'"):
            written = _scalar(value, _style(v), quote)      # in the old value's quotes
        else:       # a block scalar or a list, now one value
            written = _new_scalar(value, quote)
        edits.append((k.end_mark.index, end, ": " + written + tail))

    def remove(pair: tuple[yaml.Node, yaml.Node]) -> None:
        k, v = pair
        edits.append((_line_start(head, k.start_mark.index), _line_end(head, v.end_mark.index), ""))

    for key, field in _TOP:
        a, b = getattr(old, field), getattr(new, field)
        if a == b:
            continue
        if b is None or b == "":
            if key in top:
                remove(top[key])
        elif key in top:
            change(top[key], b)
        else:       # a spec key the file did not have: before metadata, or at the end
            at = _line_start(head, top["metadata"][0].start_mark.index) if "metadata" in top else len(head)
            edits.append((at, at, f"{key}: {_new_scalar(b, quote)}\n"))
    added: list[str] = []
    for key in list(old.metadata) + [k for k in new.metadata if k not in old.metadata]:
        a, b = old.metadata.get(key), new.metadata.get(key)
        if a == b:
            continue
        if b is None:
            if key in meta:
                remove(meta[key])
        elif key in meta:
            change(meta[key], b)
        else:
            added.append(key)
    if added:
        if isinstance(meta_node, yaml.MappingNode) and meta_node.value:
            first = meta_node.value[0][0]
            indent = " " * first.start_mark.column
            at = _line_end(head, meta_node.value[-1][1].end_mark.index)
            lines = "".join(f"{indent}{k}: {_new_scalar(new.metadata[k], quote)}\n" for k in added)
            edits.append((at, at, lines))
        else:
            lines = "".join(f"  {k}: {_new_scalar(new.metadata[k], quote)}\n" for k in added)
            if "metadata" in top:       # ``metadata:`` with nothing under it
                remove(top["metadata"])
            edits.append((len(head), len(head), "metadata:\n" + lines))
    edits.sort(key=lambda e: (e[0], e[1]))
    for (_, e1, _), (s2, _, _) in itertools.pairwise(edits):
        if s2 < e1:
            raise _CannotEdit("overlapping edits")
    for start, end, text in reversed(edits):
        head = head[:start] + text + head[end:]
    return head


def rewrite(text: str | None, new: skillmod.Skill) -> str:
    """The SKILL.md text of ``new``, written over ``text`` (the file it replaces) so that only
    what differs changes; ``new.render()`` when there is no text or it cannot be edited."""
    if not text:
        return new.render()
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    parsed = skillmod.parse(text)
    old_head, old_rest, _ = skillmod.split_frontmatter(text)
    if parsed.skill is None or not old_head:
        return new.render()
    old = parsed.skill
    opening = text[:text.index("\n") + 1]                 # the '---' line
    closing = text[len(opening) + len(old_head):len(text) - len(old_rest)]
    try:
        head = _edit_head(old_head, old, new)
    except (_CannotEdit, yaml.YAMLError, IndexError, KeyError):
        return new.render()
    body = new.body.strip("\n")
    rest = old_rest if body == old.body else (f"\n{body}\n" if body else "")
    out = opening + head + closing + ("\n" if not closing.endswith("\n") and rest else "") + rest
    again = skillmod.parse(out)
    if again.skill is None or again.skill != new.replace(body=body, description=" ".join(new.description.split())):
        return new.render()
    return out


def planned_text(action: str, previous_text: str | None, new: skillmod.Skill) -> str:
    """The text a change writes: a FIX edits the file it replaces (``rewrite``); a new skill
    (ARCHIVE, DERIVE, MERGE) is rendered whole."""
    return rewrite(previous_text, new) if action == "FIX" else new.render()
