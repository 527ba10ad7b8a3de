"""The audit's rule catalogue and its values: what each rule looks for and why it matters,
a :class:`Finding`, a skill's :func:`risk`, and :func:`visible` (text with its control and
invisible characters shown). ``skillshelf.supply.file_audit`` re-exports all of it."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Part of every stored audit: a change to the rules re-audits what was audited before.
RULES_VERSION = "20"   # a change to any rule: stored audits are done again
SEVERITIES = ("none", "low", "medium", "high")
RANK = {s: i for i, s in enumerate(SEVERITIES)}
EXCERPT_CHARS = 160
# how much of a file each rule looks at (the audit of one file is bounded: see ``scan``)
MAX_LINES_PER_RULE = 2_000
# a logical line (joined continuation lines) longer than this is looked at in its first part
MAX_LOGICAL_LINE = 8_000
EXCERPT_BYTES = 400
# a line is looked at this far either side of a position: a line of a megabyte costs no more
# per match than a short one
WINDOW = 4_000
MAX_MARKS = 20_000          # code fence marks and headings taken from one file


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str        # the severity when nothing in the context lowers or raises it
    title: str
    why: str


RULES: dict[str, Rule] = {r.id: r for r in (
    Rule("override.instructions", "high", "tells the agent to disregard its instructions",
         "An agent that follows 'ignore previous instructions' stops following the user and the system: "
         "whatever the skill says next runs with the user's authority."),
    Rule("override.conceal", "high", "tells the agent to keep something from the user",
         "The user is the one check on what an agent does; a skill that asks the agent not to tell them "
         "removes it."),
    Rule("override.disclose", "medium", "asks the agent to reveal its instructions or the environment",
         "A system prompt, the environment variables and the keys an agent holds are the user's; a skill that asks "
         "the agent to print or share them is collecting what it should never see."),
    Rule("hidden.html-comment", "medium", "instructions inside an HTML comment",
         "An HTML comment is invisible when the skill is rendered (on GitHub, in the dashboard) but the agent "
         "reads it: instructions there reach the agent and not the person who reviewed the skill."),
    Rule("hidden.invisible", "medium", "invisible characters",
         "Zero-width, tag and variation-selector characters show as nothing, yet can spell out text or data "
         "that the agent reads and a reviewer does not see."),
    Rule("hidden.link-text", "medium", "instructions in a link title or an image's alt text",
         "A link's title shows only on hover and an image's alt text only when the image fails to load; a link "
         "reference definition shows nothing. The agent reads all of it, a reader of the rendered skill does not."),
    Rule("hidden.bidi", "high", "bidirectional control characters",
         "Bidi overrides and isolates reorder how text is displayed ('Trojan Source'): the command a reviewer "
         "sees is not the one that runs."),
    Rule("hidden.control", "medium", "control characters",
         "Control characters (terminal escape sequences, backspaces) can erase or rewrite what a terminal "
         "shows when the file is printed, hiding the text that follows."),
    Rule("hidden.padding", "medium", "text pushed past the visible width",
         "A long run of spaces pushes the rest of a line off the screen of an editor or a diff; the agent "
         "still reads it."),
    Rule("hidden.long-line", "low", "a very long line",
         "Editors, terminals and diffs show only the start of a very long line; what is past the visible "
         "width is read by the agent but rarely by a reviewer."),
    Rule("exec.fetch-and-run", "high", "downloads code and runs it",
         "Piping a download into a shell runs whatever the server sends at that moment: the text reviewed "
         "is not what runs, and the server (or anyone between) can change it at any time."),
    Rule("exec.decode-and-run", "high", "decodes a payload and runs it",
         "Encoding a command (base64, hex) and running the decoded result hides what runs from a reader; "
         "plain instructions have no reason to do it."),
    Rule("exfil.secrets", "high", "sends secrets or files out",
         "SSH and cloud keys, .env files and the environment hold credentials: sending them to a URL or a "
         "remote host gives them away."),
    Rule("exfil.request", "high", "asks the agent to send secrets or files out",
         "A sentence that tells the agent to read a credentials file, a key or the environment and send it to a "
         "URL is the same theft as a command that does it: the agent writes the command."),
    Rule("secrets.hardcoded", "medium", "a credential in a known format",
         "A token in a known format (GitHub, AWS, Slack, OpenAI-style, a private key) written into a skill is "
         "someone's live credential; used to push or post, it sends the user's data to an account the skill's "
         "author controls."),
    Rule("exec.remote-access", "high", "opens the machine to a remote host",
         "A reverse shell (bash -i >& /dev/tcp/…, nc -e) hands a shell on this machine to whoever listens at "
         "the other end; a key appended to ~/.ssh/authorized_keys lets its owner log in at any time."),
    Rule("destructive.command", "high", "a destructive command",
         "Deleting the home or root folder, formatting a disk or writing over a device destroys data that "
         "cannot be recovered."),
    Rule("tools.unrestricted-shell", "medium", "grants an unrestricted shell",
         "allowed-tools lets the skill use a tool without asking the user each time; an unrestricted shell "
         "(Bash with no command pattern, Bash(*), an interpreter) means any command runs unasked, and so does "
         "an agent started with its permission checks off (--dangerously-skip-permissions, --yolo)."),
    Rule("encoded.blob", "low", "a long encoded blob",
         "A long base64 blob cannot be read by a reviewer; if it decodes to instructions or a command, those "
         "are hidden."),
    Rule("model.opinion", "high", "a model judged the skill hostile",
         "The optional model pass (judge.audit) read the skill as an agent would and judged that it asks for "
         "something its user would not want, in words the rules did not recognise. A model can be wrong: read the "
         "line it names."),
    Rule("files.binary", "medium", "a bundled executable binary",
         "A compiled program shipped in a skill cannot be reviewed; the skill may tell the agent to run it."),
    Rule("files.not-audited", "medium", "a file too large or too many files to audit",
         "What is not read cannot be checked: a script over the size cap, or files past the count cap, may "
         "hold anything."),
    Rule("files.outside-link", "medium", "a link to a file outside the skill",
         "A symbolic link to a file outside the skill folder makes the skill's content depend on a file the "
         "collection does not hold, which can change without the skill changing."),
)}


def severity_at_least(severity: str, level: str) -> bool:
    """True when ``severity`` is ``level`` or above (``none`` < ``low`` < ``medium`` < ``high``)."""
    return RANK.get(severity, 0) >= RANK[level]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str        # low | medium | high
    file: str            # relative to the skill folder
    line: int            # 1-based; 0 for a finding about the whole file
    excerpt: str         # control characters made visible, at most EXCERPT_CHARS
    message: str

    @property
    def why(self) -> str:
        r = RULES.get(self.rule)
        return r.why if r else ""

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "file": self.file, "line": self.line,
                "excerpt": self.excerpt, "message": self.message}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(rule=str(d["rule"]), severity=str(d["severity"]), file=str(d["file"]), line=int(d["line"]),
                   excerpt=str(d.get("excerpt", "")), message=str(d.get("message", "")))

    def key(self) -> tuple[str, str, str, str]:
        """What identifies a finding across edits that only move it (the line is left out)."""
        return (self.rule, self.severity, self.file, self.excerpt)


def risk(findings: Iterable[Finding | dict[str, Any]]) -> str:
    """The highest severity of the findings: ``none`` | ``low`` | ``medium`` | ``high``."""
    best = 0
    for f in findings:
        sev = f["severity"] if isinstance(f, dict) else f.severity
        best = max(best, RANK.get(sev, 0))
    return SEVERITIES[best]


def visible(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, with every control, format (zero-width,
    bidi), private-use or unassigned character shown as ``<U+XXXX>`` and tabs as spaces."""
    out: list[str] = []
    n = 0
    for ch in text:
        if ch in "\t\r\n":
            rep = " "
        elif ch.isascii() and ch.isprintable():
            rep = ch
        elif unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp") or 0xE0100 <= ord(ch) <= 0xE01EF \
                or 0xFE00 <= ord(ch) <= 0xFE0E:
            rep = f"<U+{ord(ch):04X}>"
        else:
            rep = ch
        out.append(rep)
        n += len(rep)
        if n >= limit:
            out.append("…")
            break
    return " ".join("".join(out).split())
