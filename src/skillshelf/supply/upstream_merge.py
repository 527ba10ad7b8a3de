"""A person's edit of a source's skill, merged with upstream's new text, three-way.

The base is the upstream text the edit was made from. The body is merged line by line with
``merge3`` (the Bazaar / Breezy merge, maintained on PyPI); the description is taken from the
side that changed it (a conflict when both changed it differently). The rest of the frontmatter
is the edited copy's own (its version, origin and lineage). A conflict never produces a text to
write: :class:`Merged` then carries the whole file with conflict markers for a person to read.

A skill's other files (``scripts/``, ``references/``) that a person changed in the copy are
merged the same way, line by line (:func:`merge_file`); a file that is not UTF-8 text merges
only when one side left it as it was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import merge3

from .. import skill as skillmod


@dataclass
class Merged:
    clean: bool
    description: str = ""
    body: str = ""
    marked: str = ""          # the whole files merged with conflict markers (for the review queue)
    same: bool = False        # the edited copy already holds upstream's change (nothing to write)
    why: str = ""             # what conflicts
    # a conflict: the merge with upstream's side taken where both changed (a person's other edits
    # kept), and the parts of the person's text it replaces
    theirs_description: str = ""
    theirs_body: str = ""
    replaced: list[str] = field(default_factory=list)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _marked(base: str, ours: str, theirs: str) -> str:
    m = merge3.Merge3(_lines(base), _lines(ours), _lines(theirs))
    return "".join(m.merge_lines(name_a="your copy", name_b="upstream", name_base="base", base_marker="|||||||"))


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


def merge(base: str, ours: str, theirs: str) -> Merged:
    """Merge upstream's move from ``base`` to ``theirs`` into the edited ``ours`` (SKILL.md texts)."""
    b, o, t = (skillmod.parse(x).skill for x in (base, ours, theirs))
    if b is None or o is None or t is None:
        return Merged(False, marked=_marked(base, ours, theirs), why="a side is not a readable SKILL.md")
    conflicts = []
    if o.description == b.description:
        desc = t.description
    elif t.description in (b.description, o.description):
        desc = o.description
    else:
        desc, conflicts = o.description, ["the description"]
    m = merge3.Merge3(_lines(b.body), _lines(o.body), _lines(t.body))
    regions = [r[0] for r in m.merge_regions()]
    if "conflict" in regions:
        conflicts.append(f"{regions.count('conflict')} part(s) of the body")
    if conflicts:
        body, replaced = _taking_theirs(m)
        if desc != t.description and "the description" in conflicts:
            replaced.insert(0, f"description: {o.description}")
        return Merged(False, marked=_marked(base, ours, theirs), why=" and ".join(conflicts) + " changed on both sides",
                      theirs_description=t.description if "the description" in conflicts else desc,
                      theirs_body=body, replaced=replaced)
    body = "".join(m.merge_lines())
    return Merged(True, desc, body, same=(desc == o.description and body == o.body))


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
    m = merge3.Merge3(_lines(b), _lines(o), _lines(t))
    conflicts = [r[0] for r in m.merge_regions()].count("conflict")
    if conflicts:
        return FileMerged(False, why=f"{conflicts} part(s) of it changed on both sides")
    return FileMerged(True, "".join(m.merge_lines()).encode("utf-8"))
