"""A push of the repository to an outside host: a remote added, a push URL set or a ``git push`` to a URL
whose host is not a code forge (GitHub, GitLab, Bitbucket, Codeberg …), a placeholder or this network. The
project's code then leaves for somewhere the user did not choose. Medium where it stands in a step; high when
the same line or paragraph keeps it from the user (a concealment found there, in any language the lexicon
reads) or it stands in a place nobody sees rendered; low when shown as an example or a warning. Part of the
audit of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from typing import Any

from .scopes import _PLACEHOLDER_HOST

Scan = Any      # skillshelf.supply.scan.Scan (importing it here would make a circle)

MAX_PUSHES = 50             # pushes of one file read
MAX_PARAGRAPH = 4_000       # bytes either side of a push read for its paragraph

_PUSH_TO = re.compile(
    rb"\bgit\s+(?:-c\s+\S{1,200}\s+)*(?:remote\s+(?:add|set-url)(?:\s+--(?:push|add))*\s+[\w.-]{1,40}|"
    rb"push(?:\s+-{1,2}[\w-]{1,20})*|config\s+(?:--[\w-]{1,20}\s+)*remote\.[\w.-]{1,40}\.(?:push)?url)\s+[\"'`]?"
    rb"((?:https?|ssh|git)://[^\s\"'`|)<>]{3,300}|[\w.-]{1,40}@[\w.-]{3,200}:[^\s\"'`|)<>]{1,200})")
_FORGES = (b"github.com", b"gitlab.com", b"bitbucket.org", b"codeberg.org", b"sr.ht", b"dev.azure.com",
           b"visualstudio.com", b"gitee.com", b"huggingface.co", b"hf.co", b"salsa.debian.org", b"gitlab.gnome.org",
           b"kernel.org", b"sourceforge.net", b"launchpad.net", b"gitea.com", b"pagure.io", b"googlesource.com")

_PLACEHOLDER_ENDS = (b".example.com", b".example.org", b".example.net", b".example", b".test", b".invalid")


def host_of(target: bytes) -> bytes:
    """The host of a remote's URL (``https://h/x.git``, ``ssh://git@h:22/x``, ``git@h:x``)."""
    rest = target.split(b"://", 1)[1] if b"://" in target else target
    host = re.split(rb"[/?#]", rest, maxsplit=1)[0].rsplit(b"@", 1)[-1]
    return host.split(b":")[0]


def outside(host: bytes) -> bool:
    if b"." not in host or _PLACEHOLDER_HOST.search(host) or host.endswith(_PLACEHOLDER_ENDS):
        return False
    return not any(host == f or host.endswith(b"." + f) for f in _FORGES)


def check(scan: Scan) -> None:
    """Report each push of the repository to an outside host."""
    if b"git" not in scan.words or not (b"push" in scan.words or b"remote" in scan.words):
        return
    low = scan.low
    for k, m in enumerate(_PUSH_TO.finditer(low)):
        if k >= MAX_PUSHES:
            break
        host = host_of(m.group(1))
        if not outside(host):
            continue
        ls, le = scan.line_bounds(m.start())
        sev, note = scan.grade_command("exfil.request", m.start(), ls, le)
        if sev == "high" and not scan.hidden_at(m.start()):
            sev, note = ("high", " (and the same passage keeps it from the user)") if _concealed(scan, m.start()) \
                else ("medium", "")
        scan.add("exfil.request", sev, m.start(), f"pushes the repository to {host.decode('utf-8', 'replace')!r}, "
                 f"a host that is not a code forge: the project's code leaves for a place the user did not choose{note}",
                 excerpt=scan.data[ls:le][:300])


def _concealed(scan: Scan, pos: int) -> bool:
    """A concealment was found on the line of ``pos`` or in its paragraph (no blank line between)."""
    low = scan.low
    s = low.rfind(b"\n\n", max(0, pos - MAX_PARAGRAPH), pos)
    e = low.find(b"\n\n", pos, pos + MAX_PARAGRAPH)
    first, last = scan.line_of(s + 2 if s >= 0 else max(0, pos - MAX_PARAGRAPH)), scan.line_of(e if e >= 0 else
                                                                                            min(len(low), pos + MAX_PARAGRAPH))
    return any(f.rule == "override.conceal" and first <= f.line <= last for f in scan.findings)
