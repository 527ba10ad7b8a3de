"""Skill roots, recursive discovery, and precedence between same-named skills.

A *root* is a folder that holds skill folders at any depth. The workspace (under the
home) is the one writable root; every other root is read-only. A skill's stable id is
``<root label>:<folder path relative to the root>``, so ids never depend on walk order
or on which other roots exist.

Precedence when several skills share a name (lower sorts first, first wins):
  1. root kind: workspace < project < user < plugin < other
  2. a path under a configured canonical prefix wins
  3. the shallower folder wins
  4. the id, alphabetically (a deterministic tie-break, never walk order)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError

KIND_RANK = {"workspace": 0, "project": 1, "user": 2, "plugin": 3, "other": 4}
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
             ".mypy_cache", ".pytest_cache", "site-packages", "dist", "build", ".idea", ".cache"}
SKILL_FILES = ("SKILL.md", "skill.md")
USER_CLIENT_DIRS = (".claude/skills", ".agents/skills", ".codex/skills", ".cursor/skills",
                    ".copilot/skills", ".gemini/skills")
PROJECT_CLIENT_DIRS = (".claude/skills", ".agents/skills", ".cursor/skills", ".github/skills",
                       ".gemini/skills", ".codex/skills")


@dataclass(frozen=True)
class Root:
    path: Path
    kind: str = "other"
    label: str = ""

    @property
    def writable(self) -> bool:
        return self.kind == "workspace"


@dataclass(frozen=True)
class Found:
    """One SKILL.md on disk."""

    id: str
    root: Root
    file: str           # the SKILL.md file's path (``path``: as a Path, made when first asked for)
    rel: str            # folder path relative to the root ('.' when the root itself is a skill)
    mtime_ns: int
    size: int

    @functools.cached_property
    def path(self) -> Path:
        return Path(self.file)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def depth(self) -> int:
        return 0 if self.rel == "." else self.rel.count("/") + 1


def git_root(start: Path) -> Path | None:
    """The git work tree holding ``start``, or None."""
    cur = start.resolve()
    for cand in (cur, *cur.parents):
        if (cand / ".git").exists():
            return cand
    return None


def current_repo(env: Mapping[str, str] | None = None) -> str | None:
    """The current repo's name: WORKSPACE_FOLDER, else the git root of the working directory."""
    env = os.environ if env is None else env
    folder = env.get("WORKSPACE_FOLDER")
    if folder:
        return Path(folder).name or None
    root = git_root(Path.cwd())
    return root.name if root else None


def client_roots(home: Path | None = None, cwd: Path | None = None) -> list[Root]:
    """The standard client folders that exist: project ones (cwd's git root) and user ones."""
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    roots: list[Root] = []
    project = git_root(cwd) or cwd
    for rel in PROJECT_CLIENT_DIRS:
        p = project / rel
        if p.is_dir():
            roots.append(Root(p, "project", "project-" + rel.split("/")[0].lstrip(".")))
    for rel in USER_CLIENT_DIRS:
        p = home / rel
        if p.is_dir() and all(r.path.resolve() != p.resolve() for r in roots):
            roots.append(Root(p, "user", "user-" + rel.split("/")[0].lstrip(".")))
    plugins = home / ".claude" / "plugins"
    if plugins.is_dir():
        for i, p in enumerate(sorted(_plugin_skill_dirs(plugins))):
            roots.append(Root(p, "plugin", f"plugin-{p.parent.name}" + ("" if i == 0 else f"-{i}")))
    return roots


def _plugin_skill_dirs(base: Path, max_depth: int = 6) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, _ in os.walk(base):
        depth = Path(dirpath).relative_to(base).parts
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        if len(depth) >= max_depth:
            dirnames[:] = []
        if "skills" in dirnames:
            out.append(Path(dirpath) / "skills")
            dirnames.remove("skills")
    return out


def make_roots(workspace: Path, extra: list[Path], *, include_clients: bool = False) -> list[Root]:
    """Workspace first, then extra roots (labelled by folder name, made unique), then client folders.

    Every extra root must be a folder: the library leaves out saved roots that have gone
    (``Config.missing_roots``) before calling this, so what is missing here was given for
    this one command (``--root``, ``Library(roots=...)``)."""
    roots = [Root(workspace, "workspace", "workspace")]
    used = {"workspace"}
    for path in extra:
        path = Path(path).expanduser()
        if not path.exists():
            raise ConfigError(f"skill root {path} does not exist",
                              fix=f"check the path, or leave out --root {path}")
        if not path.is_dir():
            raise ConfigError(f"skill root {path} is not a folder",
                              fix="pass the folder that holds skill folders to --root")
        resolved = path.resolve()
        if any(r.path.resolve() == resolved for r in roots):
            continue
        label = resolved.name or "root"
        if label in used:
            label = f"{resolved.parent.name}-{label}"
        n = 2
        base = label
        while label in used:
            label, n = f"{base}-{n}", n + 1
        used.add(label)
        roots.append(Root(resolved, "other", label))
    if include_clients:
        for r in client_roots():
            if all(x.path.resolve() != r.path.resolve() for x in roots):
                roots.append(r)
    return roots


# A root that is (or links to) a huge tree, such as ``/``, is walked this far and no further.
MAX_WALK_DIRS = 200_000
MAX_WALK_DEPTH = 24


def discover(root: Root, exclude: tuple[Path, ...] = (), under: str = ".") -> tuple[list[Found], list[str]]:
    """Every SKILL.md under ``root``; symlinks followed once (loop-safe). Folders in
    ``exclude`` (the library's own home: drafts, history and the database are never skills)
    are skipped. The walk stops after ``MAX_WALK_DIRS`` folders, with a note saying so.
    ``under``: only the folder at this path relative to the root (a ``scope`` part), with the
    ids and paths a walk of the whole root gives it. Returns (found, notes).

    The walk is ``os.walk``'s (top-down, folders in name order, symlinks followed), written
    out over ``os.scandir`` with paths as strings: an unchanged sync walks every root, and
    building ``Path`` objects for each folder cost more than the file system's own calls."""
    found: list[Found] = []
    notes: list[str] = []
    base = root.path
    if not base.is_dir():
        return found, notes
    base_r = base.resolve()
    if base_r == Path(base_r.anchor):
        return found, [f"refusing to walk {base} (it is the filesystem's root {base_r}): point the root at the "
                       "folder that holds the skills"]
    # a symlink to the root's own ancestor ('/', the home folder) would walk everything above it
    ancestors = {(st.st_dev, st.st_ino) for st in (_stat(p) for p in base_r.parents) if st is not None}
    excluded = {(st.st_dev, st.st_ino) for st in (_stat(p) for p in exclude) if st is not None}
    seen: set[tuple[int, int]] = set()
    walked = 0
    label = f"{root.label}:"
    sep = os.sep
    start, depth0 = os.fspath(base), 0
    for part in ([] if under == "." else under.split("/")):
        # the folders above it, as a whole walk would have seen them first
        seen.update((st.st_dev, st.st_ino) for st in [_stat(Path(start))] if st is not None)
        start, depth0 = f"{start}{sep}{part}", depth0 + 1
    stack: list[tuple[str, str, int]] = [(start, under, depth0)]   # folder, its rel, its depth
    while stack:
        dirpath, rel, depth = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError:
            continue   # a folder that cannot be listed is passed over, as os.walk does
        if depth and any(e.name == "pyvenv.cfg" for e in entries):
            continue   # a Python virtual environment: its packages' files are not skills
        try:
            st = os.stat(dirpath)
        except OSError as exc:
            notes.append(f"cannot read {dirpath}: {exc.strerror}")
            continue
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            notes.append(f"skipped {dirpath}: it links to a folder above the root ({os.path.realpath(dirpath)})")
            continue
        if key in excluded:
            notes.append(f"skipped {dirpath}: it is the library's own home (drafts and history are not skills)")
            continue
        if key in seen:
            notes.append(f"symlink loop or repeat skipped: {dirpath}")
            continue
        seen.add(key)
        walked += 1
        if walked > MAX_WALK_DIRS:
            notes.append(f"stopped walking {base} after {MAX_WALK_DIRS:,} folders: is it the right root? "
                         "point the root at the folder that holds the skills")
            break
        dirs: list[str] = []
        files: dict[str, os.DirEntry] = {}
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(e.name)
            elif e.name in SKILL_FILES:
                files[e.name] = e
        for fname in SKILL_FILES:
            entry = files.get(fname)
            if entry is not None:
                path = f"{dirpath}{sep}{fname}"
                try:
                    fst = entry.stat()
                except OSError as exc:
                    notes.append(f"cannot read {path}: {exc.strerror}")
                    break
                found.append(Found(label + rel, root, path, rel, fst.st_mtime_ns, fst.st_size))
                break  # SKILL.md wins over skill.md in the same folder
        if depth >= MAX_WALK_DEPTH:
            continue
        # pushed in reverse: the folders are walked in name order
        for d in sorted((d for d in dirs if d not in SKIP_DIRS), reverse=True):
            stack.append((f"{dirpath}{sep}{d}", d if rel == "." else f"{rel}/{d}", depth + 1))
    return found, notes


def scope(roots: list[Root], folders, exclude: tuple[Path, ...] = ()) -> list[tuple[Root, str]]:
    """(root, folder path relative to it) of each of ``folders`` inside a root (in each root
    that holds it): what a walk of that root would reach there. A folder no walk reaches (under
    a skipped or excluded folder, too deep, outside every root) is left out: it can hold no
    indexed skill."""
    out: list[tuple[Root, str]] = []
    for folder in folders:
        forms = {os.path.abspath(folder), os.path.realpath(folder)}
        for root in roots:
            rel = None
            for base in {os.path.abspath(root.path), os.path.realpath(root.path)}:
                for f in forms:
                    if f == base:
                        rel = "."
                    elif f.startswith(base.rstrip(os.sep) + os.sep):
                        rel = f[len(base.rstrip(os.sep)) + 1:].replace(os.sep, "/")
            if rel is None:
                continue
            parts = [] if rel == "." else rel.split("/")
            if any(p in SKIP_DIRS for p in parts) or len(parts) > MAX_WALK_DEPTH:
                continue
            real = Path(os.path.realpath(folder))
            if root.kind != "workspace" and any(real == Path(os.path.realpath(x)) or
                                                 Path(os.path.realpath(x)) in real.parents for x in exclude):
                continue
            out.append((root, rel))
    return list(dict.fromkeys(out))


def in_scope(skill_id: str, parts: list[tuple[Root, str]]) -> bool:
    """Whether the skill id is of a folder at or under one of the scope's parts."""
    return any(skill_id == f"{r.label}:{rel}" or skill_id.startswith(f"{r.label}:" if rel == "." else
                                                                      f"{r.label}:{rel}/") for r, rel in parts)


def path_in_scope(path: str, parts: list[tuple[Root, str]]) -> bool:
    """Whether a SKILL.md path (as ``discover`` writes them) is at or under one of the parts."""
    sep = os.sep
    return any(path.startswith((os.fspath(r.path) if rel == "." else
                                f"{os.fspath(r.path)}{sep}{rel.replace('/', sep)}") + sep) for r, rel in parts)


def _stat(p: Path):
    try:
        return os.stat(p)
    except OSError:
        return None


def precedence_key(found_kind: str, rel: str, skill_id: str, canonical: Sequence[str]) -> tuple:
    depth = 0 if rel == "." else rel.count("/") + 1
    canon = any(rel.startswith(p.strip("/")) or skill_id.startswith(p) for p in canonical if p)
    return (KIND_RANK.get(found_kind, 9), 0 if canon else 1, depth, skill_id)
