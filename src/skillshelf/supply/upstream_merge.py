"""A person's edit of a source's skill, merged with upstream's new text, three-way.

The base is the upstream text the edit was made from. The body is merged line by line with
``merge3`` (the Bazaar / Breezy merge, maintained on PyPI); the description is taken from the
side that changed it (a conflict when both changed it differently). So are the other keys upstream
may change (``license``, ``compatibility``, ``allowed-tools``, ``metadata`` keys), key by key; the
copy's own keys stay its own (its version number, dates, origin and lineage). Upstream's
``metadata.version`` is its author's: it goes to the copy's ``metadata.author-version``, as the
author's version is kept when a copy is made. A conflict never produces a text to write:
:class:`Merged` then carries the whole file with conflict markers for a person to read.

A skill's other files (``scripts/``, ``references/``) that a person changed in the copy are
merged the same way, line by line (:func:`merge_file`); a file that is not UTF-8 text merges
only when one side left it as it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import merge3

from .. import skill as skillmod, text

# the keys a FIX takes from an upstream merge (``evolution.changes.from_upstream`` checks them, from the
# same ``skill.UPSTREAM_TOP``); the copy's own (``skill.OWN_KEYS``: its version, dates, lineage and
# lifecycle) are never taken from upstream
UPSTREAM_TOP = skillmod.UPSTREAM_TOP
OWN_KEYS = skillmod.OWN_KEYS


@dataclass
class Merged:
    clean: bool
    description: str = ""
    body: str = ""
    marked: str = ""          # the whole files merged with conflict markers (for the review queue)
    same: bool = False        # the edited copy already holds upstream's change (nothing to write)
    keys: dict[str, str | None] = field(default_factory=dict)   # upstream's frontmatter changes to take
    taken: list[str] = field(default_factory=list)      # those, said plainly
    untaken: list[str] = field(default_factory=list)    # upstream's changes the copy keeps as its own
    why: str = ""             # what conflicts
    # a conflict: the merge with upstream's side taken where both changed (a person's other edits
    # kept), and the parts of the person's text it replaces
    theirs_description: str = ""
    theirs_body: str = ""
    replaced: list[str] = field(default_factory=list)


def _marked(base: str, ours: str, theirs: str) -> str:
    return text.marked3(base, ours, theirs, ("your copy", "upstream", "base"))


def _taking_theirs(m: merge3.Merge3) -> tuple[str, list[str]]:
    """The merged lines with each conflict resolved to upstream's side, and the person's lines of
    each conflict (what that replaces)."""
    out: list[str] = []
    replaced: list[str] = []
    for region in m.merge_regions():
        r: tuple[Any, ...] = tuple(region)
        kind = r[0]
        if kind == "unchanged":
            out += m.base[r[1]:r[2]]
        elif kind in ("same", "a"):
            out += m.a[r[1]:r[2]]
        elif kind == "b":
            out += m.b[r[1]:r[2]]
        else:              # conflict: (zstart, zend, astart, aend, bstart, bend)
            out += m.b[r[5]:r[6]]
            replaced.append("".join(m.a[r[3]:r[4]]))
    return "".join(out), replaced


def _keys(s: skillmod.Skill, author_version: str | None) -> dict[str, str]:
    """The frontmatter keys of ``s`` an upstream change moves into a copy (``author_version``: the
    author's version, which upstream writes as ``metadata.version``)."""
    out = {k: v for k, f in UPSTREAM_TOP.items() if (v := getattr(s, f))}
    out.update({f"metadata.{k}": v for k, v in s.metadata.items() if k not in OWN_KEYS and k != "author-version"})
    if author_version:
        out["metadata.author-version"] = author_version
    return out


def _merge_keys(b: skillmod.Skill, o: skillmod.Skill, t: skillmod.Skill,
                out: Merged) -> dict[str, tuple[str | None, str | None]]:
    """Upstream's frontmatter changes put in ``out`` (``keys``, ``taken``, ``untaken``); returns
    the keys both sides changed differently: (yours, upstream's)."""
    bk = _keys(b, b.metadata.get("version"))
    ok = _keys(o, o.metadata.get("author-version", b.metadata.get("version")))
    tk = _keys(t, t.metadata.get("version"))
    conflicts = {}
    for key in sorted(set(bk) | set(tk)):
        bv, ov, tv = bk.get(key), ok.get(key), tk.get(key)
        if bv == tv or ov == tv:
            continue
        if ov != bv:
            conflicts[key] = (ov, tv)
            continue
        out.keys[key] = tv
        said = "upstream's version" if key == "metadata.author-version" else key
        out.taken.append(f"{said} {bv or '(none)'} → {tv or '(none)'}")
    for key in ("name", "extra", *(f"metadata.{k}" for k in OWN_KEYS if k != "version")):
        bv, tv = ((getattr(b, key), getattr(t, key)) if "." not in key else
                  (b.metadata.get(key[9:]), t.metadata.get(key[9:])))
        if bv != tv:
            out.untaken.append("its keys outside the spec" if key == "extra" else key)
    return conflicts


def merge(base: str, ours: str, theirs: str) -> Merged:
    """Merge upstream's move from ``base`` to ``theirs`` into the edited ``ours`` (SKILL.md texts)."""
    b, o, t = (skillmod.parse(x).skill for x in (base, ours, theirs))
    if b is None or o is None or t is None:
        return Merged(False, marked=_marked(base, ours, theirs), why="a side is not a readable SKILL.md")
    out = Merged(True)
    both = _merge_keys(b, o, t, out)
    conflicts = [("upstream's version" if k == "metadata.author-version" else k) for k in both]
    desc, clash = text.pick3(b.description, o.description, t.description)
    if clash:
        conflicts.append("the description")
    m = merge3.Merge3(text.lines3(b.body), text.lines3(o.body), text.lines3(t.body))
    regions = [r[0] for r in m.merge_regions()]
    if "conflict" in regions:
        conflicts.append(f"{regions.count('conflict')} part(s) of the body")
    if conflicts:
        body, replaced = _taking_theirs(m)
        if desc != t.description and "the description" in conflicts:
            replaced.insert(0, f"description: {o.description}")
        replaced[:0] = [f"{k}: {ov or '(none)'}" for k, (ov, _) in both.items()]
        out.keys.update({k: tv for k, (_, tv) in both.items()})       # upstream's side, as for the text
        return Merged(False, marked=_marked(base, ours, theirs), why=" and ".join(conflicts) + " changed on both sides",
                      theirs_description=t.description if "the description" in conflicts else desc,
                      theirs_body=body, replaced=replaced, keys=out.keys, taken=out.taken, untaken=out.untaken)
    out.description, out.body = desc, "".join(m.merge_lines())
    out.same = out.description == o.description and out.body == o.body and not out.keys
    return out


@dataclass
class FileMerged:
    clean: bool
    data: bytes = b""         # the merged file (clean)
    same: bool = False        # your file already is what the merge gives (nothing to write)
    why: str = ""             # what conflicts


def merge_file(base: bytes, ours: bytes, theirs: bytes) -> FileMerged:
    """Merge upstream's move from ``base`` to ``theirs`` into the edited ``ours`` (any file of a
    skill but its SKILL.md)."""
    if ours == theirs or theirs == base:
        return FileMerged(True, ours, same=True)      # you have upstream's, or upstream left it as it was
    if ours == base:
        return FileMerged(True, theirs)               # you had not changed it: upstream's
    try:
        b, o, t = (x.decode("utf-8") for x in (base, ours, theirs))
    except UnicodeDecodeError:
        return FileMerged(False, why="both sides changed a file that is not UTF-8 text")
    m = merge3.Merge3(text.lines3(b), text.lines3(o), text.lines3(t))
    conflicts = [r[0] for r in m.merge_regions()].count("conflict")
    if conflicts:
        return FileMerged(False, why=f"{conflicts} part(s) of it changed on both sides")
    return FileMerged(True, "".join(m.merge_lines()).encode("utf-8"))


def decided_base(base: str, ours: str, theirs: str) -> str:
    """The base once a person decided a conflict draft of upstream's ``theirs`` (``base``: the text
    the copy had last merged with; ``ours``: the copy now): upstream's text, but where upstream
    changed a part the copy still holds as it was in ``base``, the base's part. A rejected draft
    carried upstream's clean changes too: they are not taken, so the next merge offers them again.
    An approved draft took them: the copy holds upstream's text there, and the base is upstream's."""
    b, o, t = text.lines3(base), text.lines3(ours), text.lines3(theirs)
    m = merge3.Merge3(b, o, t)
    out: list[str] = []
    iz = ia = ib = 0
    for zmatch, zend, amatch, aend, bmatch, bend in m.find_sync_regions():
        # between two synced parts: the copy left the base's lines as they were, upstream changed them
        out += b[iz:zmatch] if o[ia:amatch] == b[iz:zmatch] else t[ib:bmatch]
        out += b[zmatch:zend]
        iz, ia, ib = zend, aend, bend
    return "".join(out)
