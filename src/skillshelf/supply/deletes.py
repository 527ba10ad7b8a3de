"""Deletes of the home folder, its whole contents and the repository's history, however they are written:
``rm -rf "$HOME"/*`` (the quotes closed before the glob), ``"$HOME"/.[!.]*``, ``rm -rf .git``, and a
program's own delete of the home folder (``shutil.rmtree(Path.home())``, ``fs.rmSync(os.homedir(), …)``,
``FileUtils.rm_rf(Dir.home)``, ``os.RemoveAll(home)``). High in a script whatever it says beside it; a
subfolder of the home (``~/.cache/tool``) is not the home; a history deleted to start a new one at once
(``rm -rf .git && git init``, a template made a project) is medium. A person's own folders in the home
(``Documents``, ``Desktop``, ``.ssh``, ``.gnupg``, ``projects``, a key or cookie file) deleted recursively,
however the home is written (``~``, ``$HOME``, ``$env:USERPROFILE``, ``%USERPROFILE%``, ``os.homedir()``
joined, ``GetFolderPath``), are high the same way; a cache under the home is not one of them. Read with the
destructive commands (``skillshelf.supply.commands``)."""

from __future__ import annotations

import re
from typing import Any

from . import patterns as P

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

REINIT_WINDOW = 400         # bytes after a deleted history where a ``git init`` starts a new one

_HOME = rb"(?:~|\$home|\$\{home\}|%userprofile%|\$env:userprofile)"
# the home, quoted or not, and then nothing, its whole contents (``/*``, ``/.[!.]*``, ``/.*``) or a slash
_HOME_ALL = re.compile(P._RM + rb"(?:[^\s;&|<>]{1,200}\s+){0,8}?[\"']?(?P<t>" + _HOME + rb"/?[\"']?/?(?:\*|\.\[!\.\]\*|"
                       rb"\.\*|\.\?\*|\{[^}\s]{0,40}\})?)[\"']?(?=[\s;&|)]|$)")
_HISTORY = re.compile(P._RM + rb"(?:[^\s;&|<>]{1,200}\s+){0,8}?[\"']?(?P<t>(?:\./)?\.git)/?[\"']?(?=[\s;&|)]|$)")
# a program's own delete of the home folder (Python, Node, Ruby, Go, Rust, .NET, Java, PowerShell)
_CODE_HOME = re.compile(
    rb"\b(?:rmtree|rmsync|rm_rf|rm_r|rimraf(?:\.sync)?|fs\.rm|fs\.promises\.rm|fse?\.remove(?:sync)?|removeall|remove_dir_all|"
    rb"deletedirectory|directory\.delete|deleterecursively|deletetree)\s{0,3}\(\s{0,3}(?:[\w.]{1,30}\(\s{0,3}){0,2}"
    rb"(?:path\.home\(\)|pathlib\.path\.home\(\)|os\.homedir\(\)|dir\.home|os\.path\.expanduser\(\s{0,3}[\"']~/?[\"']\s{0,3}\)|"
    rb"[\"']~/?[\"']|os\.(?:getenv|environ\.get)\(\s{0,3}[\"']home[\"']\s{0,3}\)|os\.environ\[\s{0,3}[\"']home[\"']\s{0,3}\]|"
    rb"process\.env\.home|env\[[\"']home[\"']\]|os\.userhomedir\(\)|home_dir\(\)|"
    rb"environment\.getfolderpath\([^()]{0,60}userprofile\)|system\.getproperty\(\s{0,3}[\"']user\.home[\"']\s{0,3}\))"
    rb"\s{0,3}(?:\)\s{0,3}){0,2}[,)]")
# a person's own folders and files in the home: what they made and the keys they log in with
_OWN = (rb"(?:documents|desktop|downloads|pictures|music|videos|projects|onedrive|"
        rb"\.ssh|\.gnupg|\.password-store|\.erlang\.cookie)")
_SEP = rb"(?:\\{1,2}|/)"                                    # / and \ (and \\ inside a JSON or C string)
_HOME_REF = (rb"(?:~|\$home|\$\{home\}|%userprofile%|%homepath%|\$env:userprofile|\$env:home|\$home\b|"
             rb"os\.homedir\(\)|path\.home\(\)|dir\.home|os\.path\.expanduser\(\s{0,3}[\"']~[\"']\s{0,3}\))")
# a recursive delete (any shell or runtime) whose target is the home joined to one of them, quoted or not
_DELETER = (rb"(?:" + P._RM + rb"|\b(?:remove-item|rm|ri|del)\s+-r\w{0,6}\b[^\n;|]{0,60}?|\bremove-item\b[^\n;|]{0,80}?|\b(?:rd|rmdir)\s+/s\b[^\n;|&]{0,20}?|"
            rb"\b(?:rmtree|rmsync|rm_rf|rimraf|removeall|remove_dir_all|deletedirectory|deletetree)\s{0,3}\()")
# the home joined to one of them (found first: a delete is then looked for before it on its line)
_OWN_TARGET = re.compile(_HOME_REF + rb"(?:[\\\"'\s]{0,4}" + _SEP + rb"|[\"']?\s{0,3}[,/+]\s{0,3}[\"']|\s{0,3}/\s{0,3}[\"'])" +
                         rb"[\\\"']{0,2}(?P<t>" + _OWN + rb")(?=(?:/|\\{1,2})?\*?(?:\\?[\"']|[\s;&|),]|$))|"
                         rb"getfolderpath\(\s{0,3}[\"'(]{0,2}(?:\[?environment\+specialfolder\]?::)?"
                         rb"(?P<s>mydocuments|personal|desktop(?:directory)?|userprofile|mypictures|mymusic|myvideos)\b")
_DELETE_BEFORE = re.compile(_DELETER + rb"[^\n;|&]{0,200}$")
MAX_TARGETS = 20            # a person's folders named on one line, each looked before for a delete
LOOK_BACK = 300             # bytes before one where its delete is looked for
_REINIT = re.compile(rb"\bgit\s+init\b")
_TRIGGER = re.compile(rb"rmtree|rmsync|rm_rf|rm_r\b|rimraf|removeall|remove_dir_all|deletedirectory|directory\.delete|"
                      rb"deleterecursively|deletetree|fs\.rm\b|fse?\.remove")
_CALLS = frozenset((b"rmtree", b"rmsync", b"rimraf", b"removeall", b"deletedirectory", b"deleterecursively", b"deletetree"))


def triggers(scan: Scan) -> list[re.Pattern[bytes]]:
    """The triggers of a program's own delete, when the file's words hold one (``rm -`` is the commands' own)."""
    w = scan.words
    rm = b"rm" in w and not w.isdisjoint((b"rf", b"r", b"fs"))                  # rm_rf, rm_r, fs.rm
    remove = b"remove" in w and not w.isdisjoint((b"fs", b"fse", b"dir"))       # fs.remove, remove_dir_all
    if not w.isdisjoint(_CALLS) or rm or remove or (b"directory" in w and b"delete" in w):
        return [_TRIGGER]
    return []


def line(scan: Scan, text: bytes, s: int, e: int) -> bool:
    """Report a delete of the home, its contents or the history on one logical line; True when one was."""
    m = _HOME_ALL.search(text)
    if m is not None:
        t = m.group("t").replace(b"\"", b"").replace(b"'", b"").decode("utf-8", "replace")
        return scan._report("destructive.command", s + m.start(), s, e, f"deletes {t} (the home folder or all it holds)")
    m = _CODE_HOME.search(text)
    if m is not None:
        return scan._report("destructive.command", s + m.start(), s, e, "deletes the home folder recursively")
    if b"rm" in text or b"rd" in text or b"remove" in text or b"delete" in text:
        for k, t in enumerate(_OWN_TARGET.finditer(text)):
            if k >= MAX_TARGETS:
                break
            d = _DELETE_BEFORE.search(text[max(0, t.start() - LOOK_BACK):t.start()])
            if d is not None:
                what = (t.group("t") or t.group("s")).decode("utf-8", "replace")
                return scan._report("destructive.command", s + t.start(), s, e,
                                    f"deletes the person's {what} in the home folder recursively")
    m = _HISTORY.search(text)
    if m is None:
        return False
    at = s + m.start()
    sev, note = scan.grade_command("destructive.command", at, s, e)
    if sev == "high" and not scan.hidden_at(at) and _REINIT.search(scan.low, at, at + REINIT_WINDOW):
        sev, note = "medium", " (and starts a new one: a template made a project)"
    scan.add("destructive.command", sev, at, "deletes the repository's history (.git)" + note)
    return True
