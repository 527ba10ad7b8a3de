"""A skill's files served as resources: their ``skill://`` URIs, the listing page by page,
the Skills Extension's entries (SEP-2640: the frontmatter verbatim, every file with its
``sha256:`` digest and size), a skill folder's directory listing, and the read of one file.

What is served is every regular file inside the skill folder of at most
``files.MAX_RESOURCE_BYTES`` (``skill_files``), no hidden files, no dependency or VCS folders
(``sources.SKIP_DIRS``). A nested skill's files are its own in ``resources/list`` and, as the
SEP asks, also the enclosing skill's in its Skills Extension entry. A URI is resolved against the
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
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import yaml

from .. import files, skill as skillmod
from ..checks import Check
from ..errors import HeldError, NotFoundError, ValidationError
from .roots import SKIP_DIRS

# ~50 entries are ~17 KB of JSON (resources/list) or of manifests (skills/list): any client holds that
PAGE = 50
SCHEME = "skill://"
DIRECTORY = "inode/directory"       # the MIME type of a directory resource (SEP-2640)
# Files walked in one skill folder. The SEP asks for a complete ``resources`` set: a folder
# holding more than this is published without one (as a generated skill is), never cut short.
WALK_CAP = 20_000


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


def skill_files(folder: Path, *, nested: bool, skip: str = "SKILL.md") -> tuple[list[str], bool]:
    """(the servable files of a skill folder, relative and sorted; whether the walk was complete).
    Servable: regular files (a link only when it stays inside the folder) of at most
    ``files.MAX_RESOURCE_BYTES``, no hidden file or folder, no dependency or VCS folder.
    ``nested``: whether the folders of nested skills are walked too. ``skip``: the skill's own
    SKILL.md at the top (listed first by the callers)."""
    out: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        rel = here.relative_to(folder)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS
                             and (nested or not (here / d / "SKILL.md").exists()))
        for f in sorted(filenames):
            if f.startswith(".") or (rel == Path(".") and f == skip):
                continue
            seen += 1
            if seen > WALK_CAP:
                return out, False
            if _servable(folder, here / f):       # (a link is resolved against the folder resolved)
                out.append((rel / f).as_posix())
    return sorted(out, key=lambda f: (f.count("/"), f)), True


def _servable(base: Path, p: Path) -> bool:
    try:
        st = os.stat(p)            # follows a link: what a read would open
        if os.path.islink(p):
            files.contained(base, p)
    except (OSError, ValidationError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= files.MAX_RESOURCE_BYTES


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML where a timestamp stays the text it is (as the index reads it)."""


_Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def frontmatter(data: bytes) -> dict[str, Any]:
    """The YAML frontmatter of SKILL.md bytes as a JSON object: every key the author wrote,
    verbatim (SEP-2640's ``frontmatter``). ``ValidationError`` when there is none, it is not a
    mapping, or it is over the bounds the index keeps (size, aliases)."""
    try:
        text = data.decode("utf-8-sig").replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise ValidationError("SKILL.md is not UTF-8", fix="save it as UTF-8") from None
    head, _, _ = skillmod.split_frontmatter(text)
    if head is None or len(head) > skillmod.MAX_FRONTMATTER_BYTES or head.count("*") > skillmod.MAX_ALIASES:
        raise ValidationError("SKILL.md has no frontmatter the library can serve",
                              fix="start it with '---', the fields, and '---'")
    try:
        got = yaml.load(head, Loader=_Loader) if head.strip() else {}
    except Exception as exc:    # noqa: BLE001 — a safe loader fails only on content
        raise ValidationError(f"SKILL.md's frontmatter is not valid YAML ({type(exc).__name__})",
                              fix="fix the YAML between the '---' lines") from None
    if not isinstance(got, dict):
        raise ValidationError("SKILL.md's frontmatter is not a mapping", fix="write it as key: value lines")
    return _json(got)


def _json(value: Any) -> Any:
    """A YAML value as JSON can carry it (keys as text; bytes and sets as text and lists)."""
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _bad_cursor(cursor: str) -> ValidationError:
    return ValidationError(f"invalid cursor {cursor[:40]!r}",
                           fix="pass the nextCursor of the previous page, or none for the first page")


def _index_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        raise _bad_cursor(cursor)
    return int(cursor)


def _uri_parts(uri: str, min_parts: int = 2) -> list[str]:
    """The decoded path segments of a skill URI; ``ValidationError`` for one that cannot name
    a file (another scheme, empty or dot segments, control characters, text that is not
    Unicode): refused before any path is built from it."""
    shown = uri[:200]
    if not uri.startswith(SCHEME):
        raise ValidationError(f"not a skill URI: {shown}",
                              fix="skill URIs look like skill://<root>/<skill>/SKILL.md (see resources/list)")
    path = unquote(uri[len(SCHEME):])
    parts = path.split("/")
    if len(parts) < min_parts or any(p in ("", ".", "..") for p in parts):
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

    def extension_check(self) -> Check:
        """The doctor's line on the Skills Extension: the skills ``skills/list`` leaves out because
        their folder is not their name (SEP-2640 names a skill by the last segment of its URI, and
        a host refuses an entry whose frontmatter says otherwise). Search, ``get_skill`` and
        ``resources/read`` serve them all the same."""
        off = [r for r in self.catalog() if r.name != r.folder.name]
        if not off:
            return Check("skills extension", "ok", "every skill is listed by skills/list")
        shown = ", ".join(f"{r.name} (folder {r.folder.name})" for r in off[:5]) + (" …" if len(off) > 5 else "")
        return Check("skills extension", "warn",
                     f"{len(off)} skill{'s' * (len(off) != 1)} left out of skills/list: the folder is not the "
                     f"skill's name ({shown}); rename the folder or the name to match (search and get_skill "
                     "serve them)")

    def resource_page(self, cursor: str | None = None, size: int = PAGE, *,
                      hidden: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], str | None]:
        """One page of resources -- each skill's SKILL.md, then every other file of it (a nested
        skill's are listed under that skill) -- and the cursor of the next page (None: the last).
        An entry is ``uri``, ``name``, ``mime_type`` and, for a SKILL.md, the whole
        ``description``. The cursor is ``<skill index>.<file index>`` in the list ordered by
        name, so only the skills on the page have their folders walked."""
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
            skill_md = Path(rec.path).name
            names = [skill_md, *skill_files(rec.folder, nested=False, skip=skill_md)[0]]
            while f < len(names):
                if len(out) == size:
                    return out, f"{s}.{f}"
                name = names[f]
                if f == 0:
                    out.append({"uri": skill_uri(rec.id, name), "name": rec.name, "description": rec.description,
                                "mime_type": "text/markdown"})
                else:
                    out.append({"uri": skill_uri(rec.id, name), "name": f"{rec.name}/{name}",
                                "mime_type": mime(name)})
                f += 1
            s, f = s + 1, 0
        return out, None

    def manifest(self, rec: Any, *, check: Callable[[Any, str, bytes], Any] | None = None) -> dict[str, Any]:
        """A skill as the Skills Extension lists it (SEP-2640): the URI of its SKILL.md, the
        frontmatter of that file verbatim, and every file of it -- nested skills' files too --
        with its ``sha256:`` digest and size in bytes, hashed from the bytes read now (what a read
        serves). ``check(rec, file, data)``: the read gate's look at each file's bytes (raises to
        refuse). A file that cannot be read now is left out; a SKILL.md that cannot,
        ``NotFoundError``; a folder over ``WALK_CAP`` files is published without ``resources``."""
        skill_md = Path(rec.path).name
        try:
            data = files.read_bounded(rec.path, files.MAX_RESOURCE_BYTES)
        except (OSError, files.FileRefused):
            raise NotFoundError(f"skill {rec.name} has no readable SKILL.md now",
                                fix="run `skillshelf sync`, then list the skills again") from None
        if check is not None:
            check(rec, skill_md, data)
        entry: dict[str, Any] = {"uri": skill_uri(rec.id, skill_md), "frontmatter": frontmatter(data)}
        if entry["frontmatter"].get("name") != rec.folder.name:
            # SEP-2640: the URI's last path segment MUST be the frontmatter's name (a host refuses
            # the entry otherwise); such a skill is still read as resources and through the tools
            raise ValidationError(f"skill {rec.name} is in a folder named {rec.folder.name!r}: the Skills Extension "
                                  "serves a skill whose folder is its name", fix="rename the folder (or the name) "
                                  "so they match; `skillshelf validate` lists them")
        others, complete = skill_files(rec.folder, nested=True, skip=skill_md)
        if not complete:
            return entry
        resources = [{"uri": entry["uri"], "digest": _digest(data), "size": len(data)}]
        for f in others:
            try:
                # bounded: a file that grew past the cap since it was walked is left out, not read
                blob = files.read_bounded(rec.folder / f, files.MAX_RESOURCE_BYTES)
            except (OSError, files.FileRefused):
                continue
            if check is not None:
                check(rec, f, blob)
            resources.append({"uri": skill_uri(rec.id, f), "digest": _digest(blob), "size": len(blob)})
        entry["resources"] = resources
        return entry

    def skill_manifests(self, cursor: str | None = None, size: int = PAGE, *, hidden: frozenset[str] = frozenset(),
                        keep: Callable[[Any], bool] | None = None,
                        check: Callable[[Any, str, bytes], Any] | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of manifests (``manifest``) in name order, and the next page's cursor. ``keep``:
        whether a skill of the page may be listed now; ``check``: as ``manifest``'s. A skill that may
        not, or whose files are refused or unreadable now, leaves the page short."""
        start = _index_cursor(cursor)
        recs = self.listed(hidden)
        page = []
        for rec in recs[start:start + size]:
            if keep is not None and not keep(rec):
                continue
            try:
                page.append(self.manifest(rec, check=check))
            except (NotFoundError, ValidationError, HeldError):   # gone, unreadable or held since the index saw it
                continue
        return page, (str(start + size) if start + size < len(recs) else None)

    def skill_of(self, uri: str, check: Callable[[Any], Any] | None = None) -> Any:
        """The skill whose SKILL.md ``uri`` names (``skills/get``): ``ValidationError`` for the URI
        of another file of a skill (a supporting file is not a skill), ``NotFoundError`` for none."""
        rec, file, _ = self.resolve_file(uri, check)
        if file != Path(rec.path).name:
            raise ValidationError(f"{file} is a file of skill {rec.name}, not a skill",
                                  fix=f"pass the URI of a skill's SKILL.md: {skill_uri(rec.id, Path(rec.path).name)}")
        return rec

    def skill_manifest(self, uri: str) -> dict[str, Any]:
        """The manifest of the skill whose SKILL.md the URI names (``skill_of``)."""
        return self.manifest(self.skill_of(uri))

    # --- a directory ----------------------------------------------------------------------
    def directory(self, uri: str, cursor: str | None = None, size: int = PAGE,
                  check: Callable[[Any], Any] | None = None) -> tuple[Any, list[dict[str, Any]], str | None]:
        """(the skill, one page of the direct children of the directory ``uri`` names, the next
        cursor): ``skill://<skill-path>`` (the skill's root) or a folder inside it, no trailing
        slash. Files with their MIME type, folders as ``inode/directory`` (a nested skill's folder
        too: from the enclosing skill it is supporting content). ``NotFoundError`` for a URI that
        names no directory of a skill, ``ValidationError`` for a file's URI."""
        parts = _uri_parts(uri, min_parts=1)
        for cut in range(len(parts), 0, -1):
            rec = self._by_id(f"{parts[0]}:{'/'.join(parts[1:cut]) or '.'}")
            if rec is None:
                continue
            if check is not None:
                check(rec)      # the read gate, on the skill resolved, before anything inside it is looked at
            inner = parts[cut:]
            sub = "/".join(inner)
            missing = NotFoundError(f"no folder {sub!r} in skill {rec.name}",
                                    fix="list the skill's root first: resources/directory/read of "
                                        + _dir_uri(rec.id, ""))
            if any(p.startswith(".") or p in SKIP_DIRS for p in inner):
                raise missing
            try:
                target = files.contained(rec.folder, rec.folder / sub) if sub else rec.folder
            except ValidationError:
                raise missing from None
            if target.is_file():
                raise ValidationError(f"{sub} is a file of skill {rec.name}, not a folder",
                                      fix="read it with resources/read")
            if not target.is_dir():
                raise missing
            return (rec, *self._children(rec, target, sub, cursor, size))
        raise NotFoundError(f"no skill folder at {uri[:200]}",
                            fix="use the URI of a skill's folder: its SKILL.md's URI without '/SKILL.md'")

    def _children(self, rec: Any, folder: Path, sub: str, cursor: str | None,
                  size: int) -> tuple[list[dict[str, Any]], str | None]:
        start = _index_cursor(cursor)
        base = rec.folder.resolve()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            names = []
        kids: list[dict[str, Any]] = []
        for n in names[:WALK_CAP]:
            if n.startswith(".") or n in SKIP_DIRS:
                continue
            rel = f"{sub}/{n}" if sub else n
            p = folder / n
            if p.is_dir() and not p.is_symlink():
                kids.append({"uri": _dir_uri(rec.id, rel), "name": n, "mime_type": DIRECTORY})
            elif _servable(base, p):
                kids.append({"uri": skill_uri(rec.id, rel), "name": n, "mime_type": mime(n)})
        return kids[start:start + size], (str(start + size) if start + size < len(kids) else None)

    # --- one file -----------------------------------------------------------------------
    def resolve(self, uri: str) -> tuple[Any, Path]:
        """(the skill, the file's path) for ``skill://<root>/<path>/<file>``: a servable file
        of the skill folder (``skill_files``), nothing outside it. Size and file kind are
        checked by the read (``read_resource``)."""
        rec, _, target = self.resolve_file(uri)
        return rec, target

    def resolve_file(self, uri: str, check: Callable[[Any], Any] | None = None) -> tuple[Any, str, Path]:
        """(the skill, the file relative to its folder as the skill lists it, its path): the
        canonical identity of what a URI names, however it was spelled (decoded, then resolved).
        ``check`` (the read gate) is asked about the skill before any of its files is looked up."""
        parts = _uri_parts(uri)
        for cut in range(len(parts) - 1, 0, -1):
            rec = self._by_id(f"{parts[0]}:{'/'.join(parts[1:cut]) or '.'}")
            if rec is None:
                continue
            if check is not None:
                check(rec)
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
            if target.is_dir():
                # said without the server's path: the folder is named as the URI names it
                raise NotFoundError(f"{file} is a folder of skill {rec.name}, not a file",
                                    fix="list it with resources/directory/read, then read one of its files")
            if not target.exists():
                raise NotFoundError(f"no file {file!r} in skill {rec.name}",
                                    fix="read the files get_skill or resources/list names")
            return rec, file, target
        raise NotFoundError(f"no skill at {uri[:200]}", fix="use a URI that resources/list or get_skill returned")

    def read(self, uri: str, check: Callable[[Any], Any] | None = None) -> tuple[Any, str, bytes, str]:
        """(the skill, the file relative to its folder, its bytes, its MIME type) of the file a
        URI names, resolved from the decoded URI. ``files.FileRefused`` for a special file or one
        over ``files.MAX_RESOURCE_BYTES`` (never read whole), named as the URI names it."""
        rec, file, target = self.resolve_file(uri, check)
        try:
            data = files.read_bounded(target, files.MAX_RESOURCE_BYTES)
        except files.FileRefused as exc:     # said as the URI names it: the server's path is not sent
            raise files.FileRefused(exc.message.replace(str(target), f"{file} of skill {rec.name}"),
                                    rule=exc.rule, fix=exc.fix) from None
        return rec, file, data, mime(target.name)

    def read_resource(self, uri: str) -> tuple[bytes, str]:
        """The bytes of the file a URI names and its MIME type (``read``)."""
        return self.read(uri)[2:]

    # --- what changed ---------------------------------------------------------------------
    def stamps(self, uris: Iterable[str], allowed: Callable[[Any], bool]) -> dict[str, tuple | str | None]:
        """For change notifications: each URI's stamp (size, modification time and inode of the
        file it names; None when it names nothing now; ``"held"`` for a skill ``allowed``
        refuses: nothing about it is said)."""
        out: dict[str, tuple | str | None] = {}
        for uri in uris:
            try:
                rec, _, target = self.resolve_file(uri)
                st = os.stat(target)
                out[uri] = (st.st_size, st.st_mtime_ns, st.st_ino) if allowed(rec) else "held"
            except (OSError, ValidationError, NotFoundError):
                out[uri] = None
        return out

    def listing_key(self, hidden: frozenset[str] = frozenset()) -> str:
        """A value that changes when the set of listed skills (for a reader: ``hidden`` left
        out) or their SKILL.md changes: what ``list_changed`` notifications follow."""
        h = hashlib.sha256()
        for r in self.listed(hidden):
            h.update(f"{r.id}\0{r.content_hash}\0".encode("utf-8", "surrogatepass"))
        return h.hexdigest()


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _dir_uri(skill_id: str, sub: str) -> str:
    """The URI of a skill's folder (``sub`` empty: its root), without a trailing slash."""
    return skill_uri(skill_id, sub).rstrip("/") if sub else skill_uri(skill_id, "x")[:-2]


class GatedResources:
    """The skill files as resources for a reader (``Library.resources``): every answer passes the
    read gate (``supply.gate.ReadGate``: ``check``, ``check_file``, ``refusal``, ``hidden_for``),
    on the canonical identity the URI resolves to. An agent's reader (the default) never gets a
    held or blocked skill's entry, directory, or a change notification about it."""

    def __init__(self, resources: SkillResources, gate: Any, agent: Any):
        self._r, self._gate, self._agent = resources, gate, agent

    def manifests(self, cursor: str | None = None, size: int = PAGE, *,
                  reader: Any = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ``skills/list`` entries; a skill the reader may not have is left out."""
        reader = reader or self._agent
        return self._r.skill_manifests(cursor, size, hidden=self._gate.hidden_for(reader),
                                       keep=lambda rec: self._gate.refusal(reader, rec) is None,
                                       check=lambda rec, f, data: self._gate.check_file(reader, rec, f, data))

    def manifest(self, uri: str, *, reader: Any = None) -> dict[str, Any]:
        """The ``skills/get`` entry of the skill whose SKILL.md ``uri`` names (``HeldError`` if held)."""
        reader = reader or self._agent
        rec = self._r.skill_of(uri, lambda r: self._gate.check(reader, r))
        return self._r.manifest(rec, check=lambda r, f, data: self._gate.check_file(reader, r, f, data))

    def directory(self, uri: str, cursor: str | None = None, size: int = PAGE, *,
                  reader: Any = None) -> tuple[list[dict[str, Any]], str | None]:
        """One page of ``resources/directory/read`` (``SkillResources.directory``) and the next cursor."""
        _, page, nxt = self._r.directory(uri, cursor, size, lambda r: self._gate.check(reader or self._agent, r))
        return page, nxt

    def changes(self, uris: Iterable[str], *, reader: Any = None) -> tuple[str, dict[str, tuple | str | None]]:
        """(the listing's key, each URI's stamp) as the reader may see them: what change
        notifications compare (``SkillResources.listing_key``, ``stamps``)."""
        reader = reader or self._agent
        return (self._r.listing_key(self._gate.hidden_for(reader)),
                self._r.stamps(uris, lambda rec: self._gate.refusal(reader, rec) is None))
