"""The owner's decisions that protect people, kept in a file beside the database: ``decisions.json`` in
the home.

The database is an index: deleted, it is made again from the files. Three kinds of decision live in it
and in no skill file: which roots are pinned (by label and path), which skills are held on import (their
id, root, content key and name, since when) and the overlays on skills the owner cannot edit
(deprecated with a reason, an expiry date). This file keeps them, written again (atomically, under a
lock) whenever one changes. A library that opens a database made anew takes them back from it before any
agent reads (``store.carry.take_back``). The digests of pinned files are not kept: a pinned root taken
back is held whole until the owner pins it again.

The file is JSON and may have been edited or forged: it is read bounded, and every value is checked
(labels, skill ids inside their root, sizes) before it is believed. Each entry is read on its own: a bad
one is left out and named (``Decisions.problems``), the good ones are kept. A held import with a bad
name, key or time keeps its hold on its id; one whose id cannot be read, or a ``held`` list that cannot
be, sets ``Decisions.held_unread`` (which skills were held is not known). Before the first write over a
damaged file, it is moved aside to ``decisions.json.damaged-TIME``."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .files import FileRefused, atomic_write, locked, read_bounded

NAME = "decisions.json"
FORMAT = "skillshelf-decisions"
VERSION = 1
MAX_BYTES = 16 * 1024 * 1024        # ~60,000 entries of each kind
MAX_ENTRIES = 60_000
_TEXT = 2048                          # the longest value a field may have (a path, an id, a reason)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ROOT_FIELDS = ("root", "path", "pinned_at")
_HELD_FIELDS = ("skill_id", "root", "content_key", "name", "since")
_OVERLAY_FIELDS = ("skill_id", "status", "reason", "expires_on", "content_hash", "updated_at")


@dataclass
class Decisions:
    """Pinned roots (``root``, ``path``, ``pinned_at``), held imports (``_HELD_FIELDS``) and overlays
    (``_OVERLAY_FIELDS``), as plain dicts."""

    pinned: list[dict[str, Any]] = field(default_factory=list)
    held: list[dict[str, Any]] = field(default_factory=list)
    overlays: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)    # what was left out, and why (the file is damaged)
    held_unread: bool = False                            # some held import could not be read at all

    def empty(self) -> bool:
        return not (self.pinned or self.held or self.overlays)

    def counts(self) -> str:
        return (f"{len(self.pinned)} pinned root{'s' * (len(self.pinned) != 1)}, {len(self.held)} held "
                f"import{'s' * (len(self.held) != 1)}, {len(self.overlays)} overlay{'s' * (len(self.overlays) != 1)}")


def path(home: str | Path) -> Path:
    return Path(home) / NAME


def render(d: Decisions) -> str:
    """The file's text: one object, its lists sorted (the same decisions give the same bytes)."""
    body = {"format": FORMAT, "version": VERSION,
            "pinned": sorted(d.pinned, key=lambda r: r["root"]),
            "held": sorted(d.held, key=lambda h: h["skill_id"]),
            "overlays": sorted(d.overlays, key=lambda o: o["skill_id"])}
    return json.dumps(body, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def _bad(where: Path, what: str) -> ConfigError:
    return ConfigError(f"{where} is damaged or was not written by skillshelf: {what}",
                       fix=f"put back a copy of {where.name} from a backup; or, if the database is still there, "
                           "any pin, trust or deprecation writes it anew from the database (`skillshelf pin ROOT`)")


def _text(where: Path, entry: dict[str, Any], key: str, *, optional: bool = False) -> str | None:
    v = entry.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, str) or len(v) > _TEXT or _CONTROL.search(v):
        raise _bad(where, f"{key} {str(v)[:80]!r} is not a short line of text")
    return v


def _label(where: Path, entry: dict[str, Any], key: str = "root") -> str:
    v = _text(where, entry, key) or ""
    if not v or ":" in v or "/" in v or v in (".", ".."):
        raise _bad(where, f"{key} {v[:80]!r} is not a root's label")
    return v


def _skill_id(where: Path, entry: dict[str, Any]) -> str:
    v = _text(where, entry, "skill_id") or ""
    label, sep, rel = v.partition(":")
    if not sep or not label or "/" in label or not rel or rel.startswith("/") or "\\" in rel \
            or any(p in ("..", "") for p in rel.split("/")) or (rel != "." and "." in rel.split("/")):
        raise _bad(where, f"skill id {v[:80]!r} is not a skill inside its root")
    return v


def _entries(out: Decisions, body: dict[str, Any], key: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """The entries of one list that are objects of ``fields``; the others are named in ``out.problems``."""
    rows = body.get(key, [])
    if not isinstance(rows, list) or len(rows) > MAX_ENTRIES:
        out.problems.append(f"{key} is not a list of at most {MAX_ENTRIES:,} entries")
        out.held_unread = out.held_unread or key == "held"
        return []
    good = [r for r in rows if isinstance(r, dict) and set(r) <= set(fields)]
    if len(good) != len(rows):
        out.problems.append(f"{len(rows) - len(good)} entr{'y' if len(rows) - len(good) == 1 else 'ies'} of {key} "
                            f"{'is' if len(rows) - len(good) == 1 else 'are'} not an object of {', '.join(fields)}")
        out.held_unread = out.held_unread or key == "held"
    return good


def _pinned(where: Path, r: dict[str, Any]) -> dict[str, Any]:
    p = _text(where, r, "path") or ""
    if not p.startswith("/") or ".." in p.split("/"):
        raise _bad(where, f"path {p[:80]!r} of root {str(r.get('root'))[:80]!r} is not an absolute path")
    return {"root": _label(where, r), "path": p, "pinned_at": _text(where, r, "pinned_at")}


def _held(where: Path, h: dict[str, Any], out: Decisions) -> dict[str, Any]:
    sid = _skill_id(where, h)
    root = _label(where, h)
    if sid.partition(":")[0] != root:
        raise _bad(where, f"held skill {sid[:80]!r} is not in its root {root!r}")
    kept: dict[str, Any] = {"skill_id": sid, "root": root}
    for k in _HELD_FIELDS[2:]:          # (a bad name, key or time: the hold stays, on its id)
        try:
            kept[k] = _text(where, h, k)
        except ConfigError as exc:
            out.problems.append(exc.message.partition(": ")[2] + f" (held skill {sid[:80]!r}: kept held, without it)")
            kept[k] = ""
    return kept


def _overlay(where: Path, o: dict[str, Any]) -> dict[str, Any]:
    ov: dict[str, Any] = {"skill_id": _skill_id(where, o), **{k: _text(where, o, k, optional=True) for k in _OVERLAY_FIELDS[1:]}}
    if ov["status"] not in (None, "deprecated") or not ov["updated_at"] or \
            (ov["expires_on"] is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", ov["expires_on"])):
        raise _bad(where, f"the overlay of {ov['skill_id'][:80]!r} is not one skillshelf writes")
    return ov


def parse(data: bytes, where: Path) -> Decisions:
    """The decisions in a file's bytes, every field checked (labels, ids inside their root, short text).
    ``ConfigError`` naming ``where`` and the fix when the file as a whole is not what skillshelf writes
    (not JSON, nested too deep, another format); a bad entry is left out and named in ``problems``."""
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(where, f"not JSON ({str(exc)[:120] or type(exc).__name__})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT or body.get("version") != VERSION:
        raise _bad(where, f"not a {FORMAT} file of version {VERSION}")
    out = Decisions()
    for kind, fields, one in (("pinned", _ROOT_FIELDS, _pinned), ("held", _HELD_FIELDS, None),
                              ("overlays", _OVERLAY_FIELDS, _overlay)):
        for entry in _entries(out, body, kind, fields):
            try:
                if one is None:
                    out.held.append(_held(where, entry, out))
                else:
                    getattr(out, kind).append(one(where, entry))
            except ConfigError as exc:
                out.problems.append(exc.message.partition(": ")[2] + " (left out)")
                out.held_unread = out.held_unread or kind == "held"
            except RecursionError:
                out.problems.append(f"an entry of {kind} is nested too deep (left out)")
                out.held_unread = out.held_unread or kind == "held"
    return out


def damage(where: Path, d: Decisions) -> ConfigError | None:
    """The error that names what a file's bad entries were (None: every entry was read)."""
    if not d.problems:
        return None
    more = f" (and {len(d.problems) - 3} more)" if len(d.problems) > 3 else ""
    return _bad(where, "; ".join(p[:200] for p in d.problems[:3]) + more)


def damaged_copies(home: str | Path) -> list[Path]:
    """The damaged files moved aside before a write over them, oldest first."""
    return sorted(Path(home).glob(NAME + ".damaged-*"))


def read(home: str | Path) -> Decisions | None:
    """The decisions kept in the home (None: no file). A file that cannot be read, or is not one
    skillshelf writes, is a ``ConfigError`` naming it and the fix; a bad entry is left out and named in
    ``problems`` (``damage`` makes the error of them)."""
    where = path(home)
    if not where.exists() and not where.is_symlink():
        return None
    try:
        return parse(read_bounded(where, MAX_BYTES), where)
    except FileRefused as exc:
        raise _bad(where, exc.message) from None
    except OSError as exc:
        raise _bad(where, exc.strerror or str(exc)) from None


def _set_aside(where: Path) -> Path | None:
    """Move a damaged file (one that cannot be read whole) aside before it is written over: its new path,
    or None when it is not damaged (or not there)."""
    if not where.exists() and not where.is_symlink():
        return None
    try:
        kept = read(where.parent)
        if kept is None or not kept.problems:
            return None
    except ConfigError:
        pass
    aside = where.with_name(f"{NAME}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    n = 1
    while aside.exists() or aside.is_symlink():
        n += 1
        aside = aside.with_name(f"{NAME}.damaged-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{n}")
    os.replace(where, aside)
    return aside


def keep(home: str | Path, gather: Callable[[], Decisions]) -> Path | None:
    """Write the decisions ``gather`` reads now (the database's), atomically, under the home's lock for
    them: two writers in turn each write what the database holds when they hold the lock, so the last
    one written is the latest. Nothing is written for a home with no decisions and no file yet. A
    damaged file is moved aside first (``decisions.json.damaged-TIME``): its new path, else None."""
    with locked(Path(home), "decisions"):
        d = gather()
        where = path(home)
        if d.empty() and not where.exists() and not where.is_symlink():
            return None
        text = render(d)
        if len(text.encode("utf-8")) > MAX_BYTES:
            raise ConfigError(f"the owner's decisions no longer fit in {where} ({MAX_BYTES:,} bytes)",
                              fix="unpin roots or trust held imports you no longer need")
        aside = _set_aside(where)
        atomic_write(where, text)
        return aside
