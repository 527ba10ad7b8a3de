"""Fetching a collection from where it lives: a git repository (through the system ``git``), an
archive (a ``.zip`` or ``.tar.gz``, a file or a URL) or a local folder.

Nothing a fetched repository holds is ever run. Every ``git`` call is hardened: no hooks
(``core.hooksPath=/dev/null``), no templates, no file-system monitor, no submodules, no LFS smudge
(``GIT_LFS_SKIP_SMUDGE=1``), and ``GIT_TERMINAL_PROMPT=0`` so a private repository without
credentials fails at once instead of waiting for a password. The user's own credential helpers and
SSH configuration are used as git uses them. A repository is kept bare in a cache; the tree of
the commit asked for is exported with ``git archive`` and written file by file: plain files and
folders, and links only when they stay inside the exported folder.

:func:`parse` reads what a person typed (a URL, ``git@host:owner/repo``, GitHub shorthand
``owner/repo[/subdir][@ref]``, a folder, an archive) into a :class:`Spec`."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, NotFoundError, SkillshelfError, ValidationError
from ..net import redact_text

# what one export may write (a repository, not a skill: pictures and scripts are allowed)
MAX_EXPORT_FILES = 500_000
MAX_EXPORT_BYTES = 4_000_000_000
MAX_DOWNLOAD_BYTES = 300_000_000
GIT_TIMEOUT = 900          # seconds one git command may take (a clone of a large repository)
ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")
_SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9][A-Za-z0-9.-]*):(?P<path>[^/\\:].*)$")
_SHORT = re.compile(r"^(?P<owner>[A-Za-z0-9][A-Za-z0-9._-]*)/(?P<repo>[A-Za-z0-9._-]+)"
                    r"(?P<sub>(?:/[^@\s]+)*)(?:@(?P<ref>[^\s@]+))?$")
_HEX = re.compile(r"^[0-9a-f]{7,64}$")

INSTALL_GIT = ("install git (Debian/Ubuntu: `sudo apt-get install git`; macOS: `xcode-select --install`; "
               "Windows: https://git-scm.com/download/win), or add an archive (.zip / .tar.gz) instead")


class SourceError(SkillshelfError):
    """A source that cannot be fetched (unreachable, no such ref, no skills); nothing was written.
    A URL in the message or the fix loses its user and password (``redact_url``)."""

    def __init__(self, message: str, *, fix: str | None = None):
        super().__init__(redact_text(message), fix=redact_text(fix) if fix else fix)



@dataclass(frozen=True)
class Spec:
    """What to fetch. ``kind``: git | archive | folder; ``url``: what git or the download is given
    (a folder or file: its absolute path); ``subdir``: the folder inside it that holds the skills
    ("" for the top); ``ref``: the ref asked ("" for the default branch); ``label``: a name for it."""

    kind: str
    url: str
    subdir: str = ""
    ref: str = ""
    label: str = ""


def _label_from(text: str) -> str:
    name = text.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    for suf in (".git", *ARCHIVE_SUFFIXES):
        if name.lower().endswith(suf):
            name = name[: -len(suf)]
    name = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.")
    return name[:64] or "source"


def clean_subdir(subdir: str) -> str:
    """A ``--path`` as a relative POSIX path inside the source, or ValidationError."""
    s = (subdir or "").strip().replace("\\", "/").strip("/")
    parts = [p for p in s.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts) or s.startswith("/") or any(ord(c) < 32 for c in s):
        raise ValidationError(f"--path {subdir!r} must be a folder inside the source",
                              fix="pass a relative path such as skills/ or plugins/x/skills")
    return "/".join(parts)


def parse(text: str, *, github_base: str = "https://github.com", ref: str = "", subdir: str = "") -> Spec:
    """What a person typed as SOURCE, with ``--ref`` and ``--path`` (which win over a ref or
    subfolder written in the shorthand)."""
    raw = (text or "").strip()
    if not raw:
        raise ValidationError("SOURCE is empty", fix="pass a git URL, owner/repo, a folder or an archive")
    low = raw.lower()
    is_archive = low.split("?", 1)[0].endswith(ARCHIVE_SUFFIXES)
    if low.startswith(("http://", "https://")) and is_archive:
        return Spec("archive", raw, clean_subdir(subdir), ref, _label_from(raw.split("?", 1)[0]))
    if low.startswith(("https://", "http://", "ssh://", "git://", "file://")):
        if low.startswith("file://") and is_archive:
            return Spec("archive", raw[len("file://"):], clean_subdir(subdir), ref, _label_from(raw))
        return Spec("git", raw, clean_subdir(subdir), ref, _label_from(raw))
    p = Path(raw).expanduser()
    if p.exists() or raw.startswith((".", "/", "~")):
        if not p.exists():
            raise NotFoundError(f"{p} does not exist", fix="pass an existing folder, .zip or .tar.gz")
        p = p.resolve()
        if p.is_dir():
            kind = "git" if (p / ".git").exists() else "folder"
            return Spec(kind, str(p), clean_subdir(subdir), ref, _label_from(p.name))
        if is_archive and not p.is_file():
            raise ValidationError(f"{p} is not a regular file", fix="pass a .zip or .tar.gz file, or a folder")
        if is_archive:
            return Spec("archive", str(p), clean_subdir(subdir), ref, _label_from(p.name))
        raise ValidationError(f"{p} is neither a folder nor a .zip / .tar.gz archive",
                              fix="pass a folder, a .zip, a .tar.gz or a git URL")
    m = _SCP.match(raw)
    if m and "/" in m.group("path") and not raw.startswith("/"):
        return Spec("git", raw, clean_subdir(subdir), ref, _label_from(m.group("path")))
    m = _SHORT.match(raw)
    if m:
        base = (github_base or "https://github.com").rstrip("/")
        url = f"{base}/{m.group('owner')}/{m.group('repo')}"
        sub = subdir or (m.group("sub") or "")
        return Spec("git", url, clean_subdir(sub), ref or (m.group("ref") or ""), _label_from(m.group("repo")))
    raise ValidationError(f"cannot tell what {raw!r} is",
                          fix="pass a git URL (https://, ssh://, git@host:owner/repo, file://), owner/repo, "
                              "a folder, or a .zip / .tar.gz file or URL")


# --- git ------------------------------------------------------------------------------------

HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "init.templateDir=",
             "-c", "submodule.recurse=false", "-c", "fetch.recurseSubmodules=false", "-c", "core.symlinks=true",
             "-c", "protocol.ext.allow=never")


def git_env() -> dict[str, str]:
    """The environment every git call runs in: the user's, minus anything pointing git at another
    repository, plus no prompts and no LFS smudge."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE",
                        "GIT_CEILING_DIRECTORIES", "GIT_ALTERNATE_OBJECT_DIRECTORIES")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_LFS_SKIP_SMUDGE="1", GCM_INTERACTIVE="never", LC_ALL="C")
    if "GIT_SSH_COMMAND" not in env and "GIT_SSH" not in env:
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"   # no host-key or passphrase prompt either
    return env


def git_path() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise ConfigError("git is not installed (or not on PATH): it is needed to fetch git sources",
                          fix=INSTALL_GIT)
    return exe


def _last_line(text: str) -> str:
    """The line of git's stderr that says what went wrong (its first fatal or error line)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("hint:")]
    first = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
    return first.removeprefix("fatal: ").removeprefix("error: ")[:300]


def git(git_dir: Path, *args: str, check: bool = True, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess:
    """Run one hardened git command on the bare repository ``git_dir``."""
    cmd = [git_path(), *HARDENING, f"--git-dir={git_dir}", *args]
    try:
        res = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                             env=git_env(), timeout=GIT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {args[0]} took longer than {GIT_TIMEOUT} s", fix="check the network and try again") \
            from None
    if check and res.returncode != 0:
        raise SourceError(f"git {args[0]} failed: {_last_line(res.stderr.decode('utf-8', 'replace'))}",
                          fix="check the URL, your network and your access to the repository")
    return res


def _out(res: subprocess.CompletedProcess) -> str:
    return res.stdout.decode("utf-8", "replace").strip()


def uncommitted(url: str) -> list[str]:
    """A note when ``url`` is a local git working tree with uncommitted changes: only its commits
    are fetched. (git status runs in the person's own working tree, hooks and fsmonitor off.)"""
    path = Path(url[len("file://"):] if url.lower().startswith("file://") else url)
    if not path.is_absolute() or not (path / ".git").exists():
        return []
    try:
        res = subprocess.run([git_path(), *HARDENING, "-C", str(path), "--no-optional-locks", "status",
                              "--porcelain", "--untracked-files=normal"], stdin=subprocess.DEVNULL,
                             capture_output=True, env=git_env(), timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if res.returncode != 0 or not res.stdout.strip():
        return []
    n = len(res.stdout.splitlines())
    return [(f"uncommitted changes in {path} ({n} file{'s' * (n != 1)}) are not fetched: only commits are; "
             "commit them, then update again")]


def init_cache(git_dir: Path, url: str) -> None:
    """A new bare repository whose origin is ``url`` (nothing fetched yet)."""
    git_path()
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    cmd = [git_path(), *HARDENING, "init", "-q", "--bare", "--template=", str(git_dir)]
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env=git_env(), check=False)
    if res.returncode != 0:
        raise SourceError(f"git init failed: {_last_line(res.stderr.decode('utf-8', 'replace'))}",
                          fix=f"check that {git_dir.parent} is writable")
    git(git_dir, "config", "remote.origin.url", url)
    git(git_dir, "config", "gc.auto", "0")


def fetch(git_dir: Path, url: str) -> None:
    """Fetch every branch, every tag and the remote's HEAD into the cache (``url``: the origin)."""
    specs = ["+HEAD:refs/remotes/origin/HEAD", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"]
    res = git(git_dir, "fetch", "--quiet", "--force", "--prune", "--no-recurse-submodules", "--no-write-fetch-head",
              "--end-of-options", url, *specs, check=False)
    if res.returncode != 0:
        why = _last_line(res.stderr.decode("utf-8", "replace"))
        if "remote ref HEAD" in why:       # reached, but its HEAD names no commit: its branches and tags only
            refs = git(git_dir, "ls-remote", "--end-of-options", url, check=False)
            if refs.returncode == 0 and not refs.stdout.strip():
                raise SourceError(f"{url} has no commits yet", fix="push a commit that holds the skills, then try again")
            if refs.returncode == 0:
                git(git_dir, "update-ref", "-d", "refs/remotes/origin/HEAD", check=False)
                res = git(git_dir, "fetch", "--quiet", "--force", "--prune", "--no-recurse-submodules",
                          "--no-write-fetch-head", "--end-of-options", url, *specs[1:], check=False)
                if res.returncode == 0:
                    return
                why = _last_line(res.stderr.decode("utf-8", "replace"))
        raise SourceError(f"cannot fetch {url}: {why}",
                          fix="check the URL and your network; a private repository needs your git credentials "
                              "or SSH key (prompts are off)")


def resolve(git_dir: Path, url: str, ref: str) -> str:
    """The commit ``ref`` names (a branch, a tag, a commit or its prefix; "" = the default
    branch), fetching a commit by its full id when no branch or tag holds it."""
    candidates = ["refs/remotes/origin/HEAD"] if not ref else \
        [f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", ref]
    for cand in candidates:
        if cand.startswith("-"):
            continue
        res = git(git_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{cand}^{{commit}}", check=False)
        if res.returncode == 0 and _out(res):
            return _out(res)
    if ref and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", ref):
        got = git(git_dir, "fetch", "--quiet", "--no-recurse-submodules", "--no-write-fetch-head", "--end-of-options",
                  url, ref, check=False)
        if got.returncode == 0:
            return resolve(git_dir, url, ref)
    raise SourceError(f"no ref {ref!r} in {url}" if ref else f"{url} has no default branch",
                      fix="name a branch, a tag or a commit that exists there (--ref when adding, --to when"
                          " updating)")


def is_tree(git_dir: Path, commit: str, subdir: str) -> bool:
    res = git(git_dir, "cat-file", "-t", "--end-of-options", f"{commit}:{subdir}" if subdir else f"{commit}^{{tree}}",
              check=False)
    return res.returncode == 0 and _out(res) == "tree"


def ahead(git_dir: Path, old: str, new: str) -> int | None:
    """How many commits ``new`` has that ``old`` has not (None when unknown)."""
    res = git(git_dir, "rev-list", "--count", "--end-of-options", f"{old}..{new}", check=False)
    try:
        return int(_out(res)) if res.returncode == 0 else None
    except ValueError:
        return None


def _archive(git_dir: Path, tree: str, dest: Path, paths: list[str] | None = None) -> list[str]:
    cmd = [git_path(), *HARDENING, f"--git-dir={git_dir}", "archive", "--format=tar", "--end-of-options", tree]
    if paths is not None:      # (after --end-of-options a "--" would be a path)
        cmd += [f":(literal){p}" for p in paths]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=git_env())
    try:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            notes = write_tar(proc.stdout, dest, into=paths is not None)
        except tarfile.TarError as exc:     # git wrote no tar: its own error says why
            proc.wait(timeout=GIT_TIMEOUT)
            why = _last_line(proc.stderr.read().decode("utf-8", "replace")) or str(exc)
            raise SourceError(f"git archive failed: {why}") from None
        # the tar's end blocks and padding: read to the end, or git dies of a closed pipe
        while proc.stdout.read(1 << 16):
            pass
        proc.stdout.close()
        rc = proc.wait(timeout=GIT_TIMEOUT)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    assert proc.stderr is not None
    if rc != 0:
        raise SourceError(f"git archive failed: {_last_line(proc.stderr.read().decode('utf-8', 'replace'))}")
    proc.stderr.close()
    return notes


def _gitlinks(git_dir: Path, tree: str) -> list[tuple[str, str]]:
    """(path, commit) of every submodule in ``tree``."""
    listed = git(git_dir, "ls-tree", "-r", "-z", "--end-of-options", tree, check=False)
    out = []
    for item in listed.stdout.split(b"\0"):
        if item.startswith(b"160000 "):
            meta, _, path = item.partition(b"\t")
            out.append((path.decode("utf-8", "replace"), meta.split()[2].decode("ascii", "replace")))
    return out


def _module_urls(git_dir: Path, commit: str) -> dict[str, str]:
    """Submodule path (from the repository's top) -> URL, from the commit's ``.gitmodules``."""
    res = git(git_dir, "config", "--blob", f"{commit}:.gitmodules", "--list", "-z", check=False)
    if res.returncode != 0:
        return {}
    paths: dict[str, str] = {}
    urls: dict[str, str] = {}
    for item in res.stdout.decode("utf-8", "replace").split("\0"):
        key, _, value = item.partition("\n")
        if key.startswith("submodule.") and key.endswith((".path", ".url")):
            name, field = key[len("submodule."):].rsplit(".", 1)
            (paths if field == "path" else urls)[name] = value
    return {paths[n].strip("/"): urls[n] for n in paths if n in urls}


def module_url(parent: str, url: str) -> str | None:
    """A submodule's URL, relative ones resolved against the parent's; None when it may not be
    fetched: a local path or ``file://`` URL is taken only from a parent that is itself local, and
    only git's own transports (https, ssh, git) otherwise."""
    if url.startswith(("./", "../")):
        base = parent.rstrip("/")
        url = base + "/" + url
        scheme, sep, rest = url.partition("://")
        url = f"{scheme}{sep}{posixpath.normpath(rest)}" if sep else posixpath.normpath(url)
    local_parent = parent.startswith(("file://", "/"))
    if url.startswith(("https://", "http://", "ssh://", "git://")) or (_SCP.match(url) and "://" not in url
                                                                           and not url.startswith("/")):
        return url
    if local_parent and url.startswith(("file://", "/")):
        return url
    return None


MAX_SUBMODULE_DEPTH = 8     # submodules nested deeper than this are left out (and named)
MAX_SUBMODULES = 200        # submodules fetched for one source, at every depth together


def export(git_dir: Path, commit: str, subdir: str, dest: Path, *, url: str = "",
           submodules: bool = False) -> list[str]:
    """Write the tree of ``commit`` (at ``subdir``) into the new folder ``dest``; notes on what
    was left out (links leading out, submodules). With ``submodules``, each submodule of the tree
    is fetched (into a bare cache beside ``git_dir``, hardened the same way) and its commit's tree
    written at its path, and so are its own submodules, recursively: each URL resolved against its
    parent's and allowed by the same rule (``module_url``), at most ``MAX_SUBMODULE_DEPTH`` deep and
    ``MAX_SUBMODULES`` in all (each one left out is named)."""
    tree = f"{commit}:{subdir}" if subdir else commit
    notes = _archive(git_dir, tree, dest)
    return notes + _modules(git_dir, git_dir, commit, subdir, dest, url=url, fetch_them=submodules, prefix="",
                            depth=0, budget=[MAX_SUBMODULES])


def _modules(root: Path, git_dir: Path, commit: str, subdir: str, dest: Path, *, url: str, fetch_them: bool,
             prefix: str, depth: int, budget: list[int]) -> list[str]:
    """The submodules of ``commit`` (at ``subdir``) in ``git_dir``, written under ``dest``; ``root``:
    the source's own cache (every submodule's cache is kept beside it), ``prefix``: where ``dest``
    is in the source (for the notes), ``depth``: how many submodules enclose ``git_dir``'s tree."""
    tree = f"{commit}:{subdir}" if subdir else commit
    links = _gitlinks(git_dir, tree)
    if not links:
        return []
    notes: list[str] = []
    urls = _module_urls(git_dir, commit) if fetch_them else {}
    for path, sha in links:
        shown = prefix + path
        if any(part in ("", ".", "..") for part in path.split("/")):
            notes.append(f"left out {shown!r}: a submodule whose path leads out of its folder")
            continue
        where = urls.get(f"{subdir}/{path}" if subdir else path)
        sub_url = module_url(url, where) if where else None
        if not fetch_them or sub_url is None:
            why = "pass --submodules to fetch it" if not fetch_them else \
                f"its URL {where!r} is not one skillshelf fetches" if where else "it is not in .gitmodules"
            notes.append(f"left out {shown}: a submodule ({why})")
            continue
        if depth >= MAX_SUBMODULE_DEPTH:
            notes.append(f"left out {shown}: a submodule nested more than {MAX_SUBMODULE_DEPTH} deep")
            continue
        if budget[0] <= 0:
            notes.append(f"left out {shown}: a submodule past the first {MAX_SUBMODULES} of this source")
            continue
        budget[0] -= 1
        cache = root / "skillshelf-modules" / (hashlib.sha256(sub_url.encode()).hexdigest()[:16] + ".git")
        if not cache.is_dir():
            init_cache(cache, sub_url)
        fetch(cache, sub_url)
        got = resolve(cache, sub_url, sha)
        target = dest.joinpath(*path.split("/"))
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()
        notes += [f"{shown}: {n}" for n in _archive(cache, got, target)]
        notes += _modules(root, cache, got, "", target, url=sub_url, fetch_them=True, prefix=shown + "/",
                          depth=depth + 1, budget=budget)
    return notes


# an update that changes more files than this exports the whole tree again (one command line)
MAX_CHANGED_FILES = 2_000


def changed_paths(git_dir: Path, old: str, new: str, subdir: str) -> dict[str, str] | None:
    """Path (relative to ``subdir``) -> git's status letter of every file that differs between two
    commits; None when ``old`` is not in the cache or too much changed."""
    args = ["diff", "--name-status", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--end-of-options",
            old, new]
    res = git(git_dir, *args, *(["--", f":(literal){subdir}"] if subdir else []), check=False)
    if res.returncode != 0:
        return None
    items = res.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, str] = {}
    prefix = subdir + "/" if subdir else ""
    for status, path in zip(items[0::2], items[1::2]):
        if path.startswith(prefix):
            out[path[len(prefix):]] = status[:1]
    return out if len(out) <= MAX_CHANGED_FILES else None


def export_changes(git_dir: Path, new: str, subdir: str, changed: dict[str, str], previous: Path,
                   dest: Path, upstream: dict[str, bool]) -> list[str] | None:
    """The tree of ``new`` written into the new folder ``dest`` from the ``previous`` one (the folder
    of the commit before): each file of that commit it holds unchanged (``upstream``: path -> whether
    it does) and that did not change since is hard-linked (no copy, and deleting the previous folder
    then frees nothing); the ``changed`` ones, and the commit's files it does not hold as they were,
    are written from git; any other file of it (a person's) is left out. None when links cannot be
    made here (another file system) or too much is to be written: the caller exports the whole tree."""
    dest.mkdir(parents=True)
    linked: set[str] = set()
    try:
        for dirpath, dirnames, filenames in os.walk(previous):
            here = Path(dirpath)
            rel_dir = here.relative_to(previous).as_posix()
            out_dir = dest if rel_dir == "." else dest / rel_dir
            out_dir.mkdir(exist_ok=True)
            for name in [*filenames, *(d for d in dirnames if (here / d).is_symlink())]:
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if rel in changed or not upstream.get(rel):
                    continue
                src = here / name
                if src.is_symlink():
                    os.symlink(os.readlink(src), out_dir / name)
                else:
                    os.link(src, out_dir / name)
                linked.add(rel)
            dirnames[:] = [d for d in dirnames if not (here / d).is_symlink()]
        # a folder whose files were all deleted goes too (git has no empty folders)
        for dirpath, dirnames, filenames in os.walk(dest, topdown=False):
            if dirpath != str(dest) and not filenames and not os.listdir(dirpath):
                os.rmdir(dirpath)
    except OSError:
        shutil.rmtree(dest, ignore_errors=True)
        return None
    wanted = sorted({p for p, st in changed.items() if st != "D"}
                    | {p for p in upstream if p not in linked and p not in changed})
    if len(wanted) > MAX_CHANGED_FILES:
        shutil.rmtree(dest, ignore_errors=True)
        return None
    if not wanted:
        return []
    return _archive(git_dir, f"{new}:{subdir}" if subdir else new, dest, wanted)


def _inside(rel: str, target: str) -> bool:
    """Whether a link at ``rel`` pointing to ``target`` stays inside the exported folder."""
    if target.startswith("/") or "\\" in target:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return not (joined == ".." or joined.startswith("../"))


def write_tar(stream: Any, dest: Path, *, into: bool = False) -> list[str]:
    """A tar stream (``git archive``'s) written into the new folder ``dest`` (``into``: a folder that
    exists; a file already there is never overwritten): member names checked, caps kept."""
    notes: list[str] = []
    dest.mkdir(parents=True, exist_ok=into)
    count = total = 0
    with tarfile.open(fileobj=stream, mode="r|") as tf:
        for m in tf:
            name = m.name
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if not parts or m.type == tarfile.XGLTYPE or m.type == tarfile.XHDTYPE:
                continue
            if ".." in parts or name.startswith("/") or "\\" in name or any(ord(c) < 32 for c in name):
                raise SourceError(f"the repository holds a path that cannot be written safely: {name[:200]!r}")
            rel = "/".join(parts)
            count += 1
            if count > MAX_EXPORT_FILES:
                raise SourceError(f"the source holds more than {MAX_EXPORT_FILES:,} files",
                                  fix="pass --path with the folder that holds the skills")
            target = dest.joinpath(*parts)
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
            elif m.issym():
                if _inside(rel, m.linkname):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.symlink(m.linkname, target)
                else:
                    notes.append(f"left out {rel}: a link that leads out of the source ({m.linkname[:120]})")
            elif m.isreg():
                total += m.size
                if total > MAX_EXPORT_BYTES:
                    raise SourceError(f"the source is over {MAX_EXPORT_BYTES:,} bytes",
                                      fix="pass --path with the folder that holds the skills")
                target.parent.mkdir(parents=True, exist_ok=True)
                src = tf.extractfile(m)
                with open(target, "xb") as f:
                    if src is not None:
                        shutil.copyfileobj(src, f, 1 << 20)
                if m.mode & 0o111:
                    os.chmod(target, 0o755)
            else:
                notes.append(f"left out {rel}: not a plain file (a submodule or a special file)")
    return notes


# --- archives and folders ----------------------------------------------------------------------

def download(url: str, dest: Path, *, limit: int = MAX_DOWNLOAD_BYTES) -> None:
    """An archive URL downloaded to ``dest`` (bounded; a failure is one SourceError)."""
    import httpx

    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=60.0) as r:
            if r.status_code != 200:
                raise SourceError(f"cannot download {url}: HTTP {r.status_code}", fix="check the URL")
            n = 0
            with open(dest, "xb") as f:
                for chunk in r.iter_bytes(1 << 20):
                    n += len(chunk)
                    if n > limit:
                        raise SourceError(f"{url} is over {limit:,} bytes", fix="use a smaller archive")
                    f.write(chunk)
    except httpx.HTTPError as exc:
        raise SourceError(f"cannot download {url}: {exc}", fix="check the URL and your network") from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _top(files: dict[str, bytes], subdir: str) -> str:
    """The single top folder an archive's files are stepped into ("" when none)."""
    names = list(files)
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        top = next(iter(tops))
        if f"{top}/SKILL.md" not in files or subdir:
            return top + "/"
    return ""


def no_files(spec: Spec, files: dict[str, bytes]) -> SourceError:
    """The error for an archive or folder in which ``--path`` (or the whole) holds no files."""
    if not spec.subdir:
        return SourceError(f"{spec.url} holds no files",
                           fix="pass a folder or archive that holds skill folders (each with a SKILL.md)")
    top = _top(files, spec.subdir)
    if top and spec.subdir.startswith(top):
        return SourceError(f"--path {spec.subdir} holds no files in {spec.url}: the archive's single top folder "
                           f"{top} is stepped into first, so --path starts inside it",
                           fix=f"pass --path {spec.subdir[len(top):]}")
    return SourceError(f"--path {spec.subdir} holds no files in {spec.url}",
                       fix="pass --path with a folder of the source that holds the skills"
                           + (f" (inside the archive's top folder {top})" if top else ""))


def write_files(files: dict[str, bytes], executable: set[str], dest: Path, subdir: str) -> int:
    """Files read by the archive reader (checked names) written into the new folder ``dest``:
    a single top folder that holds no SKILL.md of its own is stepped into (as GitHub's archives
    wrap a repository), then ``subdir``. Returns how many were written."""
    names = list(files)
    prefix = _top(files, subdir) + (subdir + "/" if subdir else "")
    dest.mkdir(parents=True)
    n = 0
    for name in sorted(names):
        if not name.startswith(prefix):
            continue
        rel = name[len(prefix):]
        target = dest.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:
            f.write(files[name])
        if name in executable:
            os.chmod(target, 0o755)
        n += 1
    return n


def content_digest(files: dict[str, bytes]) -> str:
    """One sha256 for a folder's files (paths and bytes, in path order)."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0" + hashlib.sha256(files[name]).digest())
    return h.hexdigest()


def read_archive(spec: Spec, tmp: Path, unpack: Callable[[Path], Any]) -> tuple[Any, str]:
    """(what the reader read, the sha256 of the archive file or of the folder's content)."""
    if spec.kind == "folder":
        src = unpack(Path(spec.url))
        return src, content_digest(src.files)
    path = Path(spec.url)
    if spec.url.lower().startswith(("http://", "https://")):
        name = "archive" + next((s for s in ARCHIVE_SUFFIXES if spec.url.lower().split("?", 1)[0].endswith(s)), "")
        path = tmp / name
        download(spec.url, path)
    elif not path.exists():
        raise NotFoundError(f"{path} does not exist", fix="pass an existing .zip or .tar.gz")
    elif not path.is_file():
        raise SourceError(f"{path} is not a regular file", fix="pass a .zip or .tar.gz file")
    return unpack(path), sha256_file(path)
