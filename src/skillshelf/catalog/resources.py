"""A skill's files served as resources: their ``skill://`` URIs, the listing page by page
(with per-file sha256 digests for the Skills Extension), and the read of one file.

What is served is exactly what ``SkillRecord.files`` lists, plus the SKILL.md itself:
regular files inside the skill folder of at most ``files.MAX_RESOURCE_BYTES``, no hidden
files, no dependency or VCS folders (``sources.SKIP_DIRS``). A URI is resolved against the
index (the longest prefix that is a skill's id wins: skills can nest), every path built
from it is contained in that skill's folder, and every read is bounded: a file that grew
past the cap since it was listed is refused, never read whole.

The service is given what it reads: ``active()``, the active skills ordered by name;
``by_id(id)``, the skill with exactly that id or None; ``generation()``, a value that
changes whenever the index does (the listing is read once per generation, not once per
page: a full read of 5.3k skills takes ~0.5-1 s).

Errors: ``ValidationError`` for a request that can never be served (a malformed URI or
cursor; ``files.FileRefused``, a subclass, for a special file or one over the cap),
``NotFoundError`` for a skill or file that is not there, ``OSError`` for a read that failed.
"""

from __future__ import annotations

import hashlib
import mimetypes
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .. import files
from ..errors import NotFoundError, ValidationError
from .roots import SKIP_DIRS

# ~50 entries are ~17 KB of JSON (resources/list) or of manifests (skills/list): any client holds that
PAGE = 50
SCHEME = "skill://"


def skill_uri(skill_id: str, file: str = "SKILL.md") -> str:
    """``skill://<root>/<path of the skill in its root>/<file>``, percent-encoded."""
    root, _, rel = skill_id.partition(":")
    path = root if rel in ("", ".") else f"{root}/{rel}"
    return SCHEME + quote(path, safe="/-_.~") + "/" + quote(file, safe="/-_.~")


def mime(file: str) -> str:
    """The MIME type a file is served with (Markdown for ``.md``, text when unknown)."""
    if file.endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(file)[0] or "text/plain"


def _bad_cursor(cursor: str) -> ValidationError:
    return ValidationError(f"invalid cursor {cursor[:40]!r}",
                           fix="pass the nextCursor of the previous page, or none for the first page")


def _index_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise _bad_cursor(cursor)
    return int(cursor)


def _uri_parts(uri: str) -> list[str]:
    """The decoded path segments of a skill URI; ``ValidationError`` for one that cannot name
    a file (another scheme, empty or dot segments, control characters, text that is not
    Unicode): refused before any path is built from it."""
    shown = uri[:200]
    if not uri.startswith(SCHEME):
        raise ValidationError(f"not a skill URI: {shown}",
                              fix="skill URIs look like skill://<root>/<skill>/SKILL.md (see resources/list)")
    path = unquote(uri[len(SCHEME):])
    parts = path.split("/")
    if len(parts) < 2 or any(p in ("", ".", "..") for p in parts):
        raise ValidationError(f"bad skill URI: {shown}",
                              fix="use a URI from resources/list: skill://<root>/<skill>/<file>")
    # a NUL byte or a lone surrogate would make the path functions raise (ValueError,
    # UnicodeEncodeError) instead of saying what is wrong with the request
    if any(ord(c) < 32 or ord(c) == 127 or 0xD800 <= ord(c) <= 0xDFFF for c in path):
        raise ValidationError(f"bad skill URI: {shown} (it holds a control character or invalid text)",
                              fix="use a URI from resources/list: skill://<root>/<skill>/<file>")
    return parts


class SkillResources:
    """The library's skill files as resources."""

    def __init__(self, *, active: Callable[[], list[Any]], by_id: Callable[[str], Any | None],
                 generation: Callable[[], str]):
        self._active = active
        self._by_id = by_id
        self._generation = generation
        self._lock = threading.Lock()
        self._catalog: tuple[str, list[Any]] | None = None

    # --- the listing --------------------------------------------------------------------
    def catalog(self) -> list[Any]:
        """The active skills ordered by name, without their bodies, read once per index
        generation."""
        import dataclasses

        gen = self._generation()
        with self._lock:
            if self._catalog is not None and self._catalog[0] == gen:
                return self._catalog[1]
        recs = [dataclasses.replace(r, body="") for r in self._active()]
        with self._lock:
            self._catalog = (gen, recs)
        return recs

    def listed(self, hidden: frozenset[str] = frozenset()) -> list[Any]:
        """``catalog()`` without the skills whose ids are in ``hidden`` (held back from the reader)."""
        recs = self.catalog()
        return [r for r in recs if r.id not in hidden] if hidden else recs

    def resource_page(self, cursor: str | None = None, size: int = PAGE, *,
                      hidden: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], str | None]:
        """One page of resources -- each skill's SKILL.md, then its other files -- and the
        cursor of the next page (None: the last). An entry is ``uri``, ``name``,
        ``mime_type`` and, for a SKILL.md, ``description``. The cursor is
        ``<skill index>.<file index>`` in the list ordered by name, so only the skills on the
        page have their folders walked."""
        s, f = 0, 0
        if cursor:
            a, dot, b = cursor.partition(".")
            if not (dot and a.isdigit() and b.isdigit() and len(cursor) <= 19):
                raise _bad_cursor(cursor)
            s, f = int(a), int(b)
        recs = self.listed(hidden)
        out: list[dict[str, Any]] = []
        while s < len(recs):
            rec = recs[s]
            names = ["SKILL.md", *rec.files()]
            while f < len(names):
                if len(out) == size:
                    return out, f"{s}.{f}"
                name = names[f]
                if f == 0:
                    out.append({"uri": skill_uri(rec.id), "name": rec.name, "description": rec.description[:200],
                                "mime_type": "text/markdown"})
                else:
                    out.append({"uri": skill_uri(rec.id, name), "name": f"{rec.name}/{name}",
                                "mime_type": mime(name)})
                f += 1
            s, f = s + 1, 0
        return out, None

    def manifest(self, rec: Any) -> dict[str, Any]:
        """A skill as the Skills Extension lists it: its URI, frontmatter, and each servable
        file's URI, sha256 and MIME type (a file that cannot be read now is left out)."""
        resources = []
        for f in ["SKILL.md", *rec.files()]:
            p = Path(rec.path) if f == "SKILL.md" else rec.folder / f
            try:
                # bounded: a file that grew past the cap since it was listed is left out, not read
                digest = hashlib.sha256(files.read_bounded(p, files.MAX_RESOURCE_BYTES)).hexdigest()
            except (OSError, files.FileRefused):
                continue
            resources.append({"uri": skill_uri(rec.id, f), "sha256": digest, "mimeType": mime(f)})
        fm: dict[str, Any] = {"name": rec.name, "description": rec.description}
        if rec.metadata:
            fm["metadata"] = rec.metadata
        return {"uri": skill_uri(rec.id), "frontmatter": fm, "resources": resources}

    def skill_manifests(self, cursor: str | None = None, size: int = PAGE, *, hidden: frozenset[str] = frozenset(),
                        keep: Callable[[Any], bool] | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of manifests (``manifest``) in name order, and the next page's cursor. ``keep``:
        whether a skill of the page may be listed now (one that may not leaves the page short)."""
        start = _index_cursor(cursor)
        recs = self.listed(hidden)
        page = [self.manifest(r) for r in recs[start:start + size] if keep is None or keep(r)]
        return page, (str(start + size) if start + size < len(recs) else None)

    def skill_manifest(self, uri: str) -> dict[str, Any]:
        """The manifest of the skill a URI of it names (its SKILL.md or any of its files)."""
        return self.manifest(self.resolve(uri)[0])

    # --- one file -----------------------------------------------------------------------
    def resolve(self, uri: str) -> tuple[Any, Path]:
        """(the skill, the file's path) for ``skill://<root>/<path>/<file>``: exactly what
        ``SkillRecord.files`` would list (plus SKILL.md), nothing outside the skill folder.
        Size and file kind are checked by the read (``read_resource``)."""
        rec, _, target = self.resolve_file(uri)
        return rec, target

    def resolve_file(self, uri: str) -> tuple[Any, str, Path]:
        """(the skill, the file relative to its folder as the skill lists it, its path): the
        canonical identity of what a URI names, however it was spelled (decoded, then resolved)."""
        parts = _uri_parts(uri)
        for cut in range(len(parts) - 1, 0, -1):
            rec = self._by_id(f"{parts[0]}:{'/'.join(parts[1:cut]) or '.'}")
            if rec is None:
                continue
            inner = parts[cut:]
            file = "/".join(inner)
            if file == Path(rec.path).name:
                return rec, file, Path(rec.path)
            if any(p.startswith(".") or p in SKIP_DIRS for p in inner):
                raise NotFoundError(f"no file {file!r} in skill {rec.name} (hidden and dependency folders are "
                                    "not served)", fix="read the files get_skill or resources/list names")
            try:
                target = files.contained(rec.folder, rec.folder / file)
            except ValidationError:
                raise NotFoundError(f"no file {file!r} in skill {rec.name}: it leads outside the skill folder",
                                    fix="read the files get_skill or resources/list names") from None
            if not target.exists():
                raise NotFoundError(f"no file {file!r} in skill {rec.name}",
                                    fix="read the files get_skill or resources/list names")
            return rec, file, target
        raise NotFoundError(f"no skill at {uri[:200]}", fix="use a URI that resources/list or get_skill returned")

    def read(self, uri: str) -> tuple[Any, str, bytes, str]:
        """(the skill, the file relative to its folder, its bytes, its MIME type) of the file a
        URI names, resolved from the decoded URI. ``files.FileRefused`` for a special file or one
        over ``files.MAX_RESOURCE_BYTES`` (never read whole)."""
        rec, file, target = self.resolve_file(uri)
        return rec, file, files.read_bounded(target, files.MAX_RESOURCE_BYTES), mime(target.name)

    def read_resource(self, uri: str) -> tuple[bytes, str]:
        """The bytes of the file a URI names and its MIME type (``read``)."""
        return self.read(uri)[2:]
