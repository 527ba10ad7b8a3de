"""The record of what was done erased, read by the command and whatever words surround it: a security log or a
login record emptied, truncated or removed (``/var/log/auth.log``, ``audit.log``, ``wtmp``), a shell's history
removed or turned off (``~/.bash_history``, ``history -c``, ``unset HISTFILE``), the Windows event log cleared; git's hooks pointed outside the project by an alias, the global config or a
shell's start-up file. No
build, test or formatting step needs it; what it does is leave the user nothing to check. Medium on its own (a
privacy clean-up a person asked for does the same), graded by where it stands like any command (an example in a
passage about attacks is lower); the misreport reader grades it high when the user is also told something else.
Part of the audit of one file (``skillshelf.supply.scan``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .rules import MAX_LINES_PER_RULE, RANK

Scan = Any        # skillshelf.supply.scan.Scan (importing it here would make a circle)

_WORDS = frozenset((b"auth", b"audit", b"wtmp", b"btmp", b"lastlog", b"faillog", b"secure", b"bash_history",
                    b"zsh_history", b"sh_history", b"fish_history", b"histfile", b"history", b"wevtutil",
                    b"eventlog", b"histsize", b"histfilesize"))
# a record of logins, commands or audit events
_RECORD = (rb"/var/log/(?:auth\.log|secure|audit/audit\.log|audit\.log|wtmp|btmp|lastlog|faillog)\b|"
           rb"(?:~|\$home|\$\{home\})?/?\.(?:bash|zsh|sh|ksh|python|mysql|psql|node_repl)_history\b|"
           rb"\.local/share/fish/fish_history\b|\$\{?histfile\b")
RECORD = re.compile(_RECORD)
# emptied, truncated, removed or pointed at nothing, in the statement before the record (tried only before a record)
_ERASE = re.compile(rb"(?:(?:^|[\s;&|(`])(?::|true|echo(?:\s+-n)?(?:\s+(?:\"\"|''))?|printf\s+(?:\"\"|'')|"
                    rb"cat\s+/dev/null)?\s{0,3}>\s{0,3}[\"']?|truncate\s+(?:-s\s{0,2}0|--size[=\s]0)\s+[^;&|\n]{0,80}?|"
                    rb"(?:rm|shred|unlink|srm|wipe)\s+(?:-{1,2}[\w-]{1,20}\s+){0,4}[^;&|\n]{0,80}?|"
                    rb"(?:cp|ln\s+-sf?)\s+/dev/null\s+[\"']?|remove-item\s+[^;&|\n]{0,80}?|clear-content\s+[^;&|\n]{0,80}?)"
                    rb"(?:" + _RECORD + rb")", re.MULTILINE)
# history turned off or cleared, event logs cleared
_OFF = re.compile(rb"\b(?:history\s+-c\b|unset\s+histfile\b|(?:export\s+)?hist(?:file)?size=0\b|"
                  rb"(?:export\s+)?histfile=/dev/null\b|set\s+\+o\s+history\b|wevtutil(?:\.exe)?\s+cl\b|"
                  rb"clear-eventlog\b)")


# git's hooks pointed outside the project (a home or temporary folder, an absolute path, nothing), by an alias of git,
# the global or system config, or a line for a shell's start-up file: the project's checks stop running, and what is
# put in that folder runs instead, on every later commit, out of the project's sight
_HOOKS = re.compile(rb"core\.hookspath[\s=\"']{1,4}(?:\$\{?home\b|~/|\$\{?tmpdir\b|/(?!\w*hooks?\b)|%\w{1,20}%)")
_HOOKS_KEPT = re.compile(rb"\balias\s+git=|--(?:global|system)\b|\.(?:bashrc|zshrc|profile|bash_profile|zprofile)\b|"
                         rb"config\.fish\b|\.gitconfig\b")


def check(scan: Scan) -> None:
    """A command that erases a record of what was done (a security log, a login record, a shell's history), or
    points git's hooks outside the project where the user does not look."""
    if b"hookspath" in scan.low:
        _hooks(scan)
    if scan.words.isdisjoint(_WORDS):
        return
    if any(f.rule == "override.conceal" and RANK[f.severity] >= RANK["medium"] for f in scan.findings):
        return            # concealment read already (a misreport beside it is graver)
    for n, m in enumerate(_erasures(scan)):
        if n > MAX_LINES_PER_RULE:
            return
        if m is not None:
            _conceals(scan, m, f"erases the record of what was done: {scan._shown(m.start(), m.group().strip())!r} "
                               "(a security log, a login record or a shell's history emptied or turned off)")
            return


def _conceals(scan: Scan, m: re.Match[bytes], said: str) -> None:
    """A concealment found at ``m``: graded as a command there, high only where it is hidden."""
    s, e = scan.line_bounds(m.start())
    sev, note = scan.grade_command("override.conceal", m.start(), s, e)
    if sev == "high" and not scan.hidden_at(m.start()):
        sev, note = "medium", ""
    scan.add("override.conceal", sev, m.start(), said + note)


def _erasures(scan: Scan) -> Iterator[re.Match[bytes] | None]:
    """Each record named, with the erasure that ends at it (None when it is only named); then history turned off."""
    low = scan.low
    if b"/var/log/" not in low and b"_history" not in low and b"histfile" not in low:
        recs: Iterator[re.Match[bytes]] = iter(())
    else:
        recs = RECORD.finditer(low)
    for rec in recs:
        ls = low.rfind(b"\n", 0, rec.start()) + 1
        m = None
        for m in _ERASE.finditer(low, max(ls, rec.start() - 160), rec.end()):
            if m.end() == rec.end():
                break
        yield m if m is not None and m.end() == rec.end() else None
    if b"hist" in low or b"eventlog" in low or b"wevtutil" in low:
        yield from _OFF.finditer(low)


def _hooks(scan: Scan) -> None:
    """git's hooks pointed outside the project where it persists (an alias, the global config, a start-up file)."""
    if any(f.rule == "override.conceal" and RANK[f.severity] >= RANK["medium"] for f in scan.findings):
        return
    for n, m in enumerate(_HOOKS.finditer(scan.low)):
        if n >= MAX_LINES_PER_RULE:
            return
        if _HOOKS_KEPT.search(scan.low, max(0, m.start() - 200), min(len(scan.low), m.end() + 200)) is None:
            continue
        _conceals(scan, m, f"points git's hooks outside the project: {scan._shown(m.start(), m.group().strip())!r} "
                           "(the project's checks stop running and what that folder holds runs instead, out of the "
                           "user's sight)")
        return
