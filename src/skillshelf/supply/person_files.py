"""The files of a source's folder that are a person's: what the commit the folder holds does not.

The lock lists the files ``skills/list`` serves; a source's folder holds more (hidden files,
``node_modules``, files over the size bound, files outside any skill). To tell a person's file
among those from upstream's, the folder is compared with the tree of the commit it holds: for
git, ``git ls-tree`` of that commit in the cached clone (each file's blob id and size); for an
archive, the listing this module records when its tree is put in place (``record``). A file
neither the lock nor that tree holds, or that differs from it, is a person's.

``kept_dir`` names a new folder under ``sources/.kept/LABEL/`` (unique: two keeps in one second
get two folders)."""

from __future__ import annotations

import datetime as _dt
import filecmp
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from ..files import FileRefused, read_text_bounded, write_file
from . import fetch as fetchmod
from .source_edits import inside

# a tree: path (relative to the source's folder) -> (how it is digested, digest, size)
Tree = dict[str, tuple[str, str, int]]

GITLINK = "gitlink"          # a submodule's folder: the tree does not list what is under it
LINK = "link"                # a symbolic link of the commit
MAX_MANIFEST_BYTES = 64_000_000
HEX = "0123456789abcdef"


def kept_dir(base: Path, label: str) -> Path:
    """A new folder ``base/.kept/LABEL/<time>`` (``-2``, ``-3``… when that second has one already)."""
    root = base / ".kept" / label
    root.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 10_000):
        path = root / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{root}: too many kept folders in one second")


def git_tree(cache: Path, commit: str, subdir: str, *, links: bool = False) -> Tree | None:
    """Every file of ``commit`` (at ``subdir``) in the git cache ``cache`` (``links``: its symbolic
    links too, as ``LINK``); None when the cache does not hold that commit."""
    if not cache.is_dir() or not commit:
        return None
    res = fetchmod.git(cache, "ls-tree", "-r", "-l", "-z", "--end-of-options",
                       f"{commit}:{subdir}" if subdir else commit, check=False)
    if res.returncode != 0:
        return None
    algo = "git-sha256" if len(commit) == 64 else "git-sha1"
    out: Tree = {}
    for item in res.stdout.split(b"\0"):
        if not item:
            continue
        meta, _, raw = item.partition(b"\t")
        parts = meta.split()
        if len(parts) < 4:
            continue
        path = raw.decode("utf-8", "surrogateescape")
        if parts[1] == b"commit":
            out[path] = (GITLINK, "", -1)
        elif parts[1] == b"blob" and not parts[0].startswith(b"120"):      # (a link is never a person's file)
            out[path] = (algo, parts[2].decode("ascii", "replace"), int(parts[3]))
        elif parts[1] == b"blob" and links:
            out[path] = (LINK, parts[2].decode("ascii", "replace"), int(parts[3]))
    return out


def listed(entry: Any) -> set[str]:
    """The path (relative to the source's folder) of every file the lock ``entry`` lists."""
    return {f.path if s.path == "." else f"{s.path}/{f.path}" for s in entry.skills for f in s.files}


def upstreams(cache: Path, commit: str, subdir: str, folder: Path,
              locked: Collection[str] = ()) -> dict[str, bool] | None:
    """Each file of ``commit`` (at ``subdir``), and whether ``folder`` holds it as that commit does (a
    new tree may link it then): one of ``locked`` (the lock's, checked already: the folder did not
    drift) is taken as it is, any other is compared with git's blob. A path the commit does not hold
    is not in it: a person's file reaches a new tree only as one kept (``kept_edits``). None when the
    cache lacks the commit."""
    tree = git_tree(cache, commit, subdir, links=True)
    if tree is None:
        return None
    out: dict[str, bool] = {}
    for rel, want in tree.items():
        if want[0] == GITLINK or any(part in ("", ".", "..") for part in rel.split("/")):
            continue
        path = folder.joinpath(*rel.split("/"))
        try:
            st = path.lstat()
        except OSError:
            out[rel] = False
            continue
        if want[0] == LINK:     # (the same link: its target is the blob)
            out[rel] = stat.S_ISLNK(st.st_mode) and _link_id(path, len(commit)) == want[1]
        else:
            out[rel] = stat.S_ISREG(st.st_mode) and (rel in locked or not differs(path, want, st.st_size))
    return out


def _link_id(path: Path, width: int) -> str:
    target = os.fsencode(os.readlink(path))
    h = hashlib.sha256() if width == 64 else hashlib.sha1()
    h.update(b"blob %d\0" % len(target) + target)
    return h.hexdigest()


def _manifest(base: Path, label: str) -> Path:
    return base / ".trees" / f"{label}.json"


def listing(tree: Path) -> dict[str, list]:
    """Every file of a fetched tree with its sha256 and size (what ``record`` keeps)."""
    return {rel: ["sha256", _digest(tree / rel, "sha256"), st.st_size] for rel, st in walk(tree)}


def record(base: Path, label: str, commit: str, files: dict[str, list]) -> None:
    """An archive's tree as put in place (``listing``, taken before a person's files were carried
    into it), so the next update can tell upstream's files the lock does not list from a person's."""
    write_file(_manifest(base, label), json.dumps({"commit": commit, "files": files}, sort_keys=True))


def recorded(base: Path, label: str, commit: str) -> Tree | None:
    """The tree ``record`` kept for ``commit`` (None when it kept none for it, or its record is damaged)."""
    got = _recorded(base, label)
    return got[1] if isinstance(got, tuple) and got[0] == commit else None


def damaged(base: Path, label: str) -> list[str]:
    """A note when the record of ``label``'s archive is there but damaged (it is taken as absent: a
    file of the folder the lock does not list is kept as a person's)."""
    got = _recorded(base, label)
    return [got] if isinstance(got, str) else []


def _recorded(base: Path, label: str) -> tuple[str, Tree] | str | None:
    """(commit, tree) of the record; None when there is none; what is wrong when it is damaged."""
    bad = (f"the record of what the archive of {label} held (sources/.trees/{label}.json) is damaged: each file "
           "of its folder the lock does not list is taken for yours and kept")
    try:
        data = json.loads(read_text_bounded(_manifest(base, label), MAX_MANIFEST_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, FileRefused, RecursionError):
        return bad
    if not isinstance(data, dict) or not isinstance(data.get("commit"), str) or not isinstance(data.get("files"), dict):
        return bad
    out: Tree = {}
    for rel, v in data["files"].items():
        if not (isinstance(v, list) and len(v) == 3 and v[0] == "sha256" and isinstance(v[1], str)
                and len(v[1]) == 64 and not v[1].strip(HEX) and type(v[2]) is int and v[2] >= 0):
            return bad
        out[rel] = ("sha256", v[1], v[2])
    return data["commit"], out


def forget(base: Path, label: str) -> None:
    _manifest(base, label).unlink(missing_ok=True)


def walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to ``folder``, its stat) of every regular file under it (links not followed)."""
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        rel_dir = here.relative_to(folder).as_posix()
        dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        for name in filenames:
            p = here / name
            try:
                st = p.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            yield (name if rel_dir == "." else f"{rel_dir}/{name}"), st


def _digest(path: Path, how: str) -> str:
    if how == "sha256":
        h = hashlib.sha256()
    else:
        h = hashlib.sha256() if how == "git-sha256" else hashlib.sha1()      # (git's own object id)
        h.update(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256(path: Path) -> str:
    return _digest(path, "sha256")


def differs(path: Path, want: tuple[str, str, int], size: int) -> bool:
    how, digest, want_size = want
    if how == GITLINK:
        return False
    if size != want_size:
        return True
    try:
        return _digest(path, how) != digest
    except OSError:
        return False


def persons(folder: Path, tree: Tree, *, skip: Collection[str] = (), since: float | None = None) -> dict[str, str]:
    """The files of ``folder`` that ``tree`` does not hold (added) or holds otherwise (changed),
    each a person's; one in a submodule's folder (the tree does not list its files) is ``unknown``;
    ``skip``: paths not to look at (the lock's, checked already); ``since``: only files written at
    or after that time."""
    links = [p + "/" for p, v in tree.items() if v[0] == GITLINK]
    out = {}
    for rel, st in walk(folder):
        if rel in skip or (since is not None and st.st_mtime < since):
            continue
        if any(rel.startswith(p) for p in links):
            out[rel] = "unknown"
            continue
        want = tree.get(rel)
        if want is None:
            out[rel] = "added"
        elif differs(folder / rel, want, st.st_size):
            out[rel] = "changed"
    return out


def keep(folder: Path, files: dict[str, str], new_tree: Path | None, dest: Callable[[], Path], *,
         carry: bool = True, write: bool = True) -> tuple[list[str], list[str]]:
    """A person's ``files`` of ``folder`` kept before the folder is replaced by ``new_tree``: one
    already in the new tree (the same file, linked) stays; one the new tree has no file at is
    carried into it (with ``carry``); any other is copied under ``dest()`` (made once, when one
    is). Returns (carried, copied). Without ``write``, what it would do, writing nothing."""
    carried: list[str] = []
    copied: list[str] = []
    made: list[Path] = []
    for rel in sorted(files):
        src = inside(folder, rel)
        if src is None or not src.is_file():
            continue
        there = inside(new_tree, rel) if new_tree is not None else None
        if there is not None and new_tree is not None and _linked(new_tree, rel):   # (never through a link)
            there = None
        if there is not None and there.exists():
            try:
                if os.path.samefile(src, there):
                    carried.append(rel)
                    continue
                if filecmp.cmp(src, there, shallow=False):      # the new tree has the same file
                    continue
            except OSError:
                pass
        elif carry and there is not None and not any(p.is_file() for p in there.parents if p != new_tree):
            if write:
                there.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, there)
            carried.append(rel)
            continue
        if not write:
            copied.append(rel)
            continue
        if not made:
            made.append(dest())
        to = inside(made[0], rel)
        if to is None:
            continue
        to.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, to)
        copied.append(rel)
    return carried, copied


def _linked(root: Path, rel: str) -> bool:
    """Whether ``rel`` under ``root``, or a folder on the way to it, is a symbolic link."""
    here = root
    for part in rel.split("/"):
        here = here / part
        if here.is_symlink():
            return True
    return False


def unlink_shared(folder: Path, new_tree: Path, files: list[str], cache: Path, commit: str, subdir: str) -> None:
    """The new tree was made with hard links to the old folder's unchanged files: a person's
    in-place write to one of ``files`` is in both. Each such file of the new tree is written
    again from ``commit`` (or removed, when git has no such file), so the new tree is upstream's."""
    for rel in files:
        a, b = inside(folder, rel), inside(new_tree, rel)
        if a is None or b is None or not b.exists():
            continue
        try:
            if not os.path.samefile(a, b):
                continue
        except OSError:
            continue
        mode = b.stat().st_mode
        b.unlink()
        res = fetchmod.git(cache, "show", "--end-of-options", f"{commit}:{subdir + '/' if subdir else ''}{rel}",
                           check=False)
        if res.returncode == 0:
            b.write_bytes(res.stdout)
            os.chmod(b, mode & 0o777)
