"""What a skill asks an agent to do that is risky: the rules, over the text of one file.

A skill is instructions an agent follows, often with scripts it runs, and most of a library
comes from other people's repositories. :func:`audit_bytes` (or :func:`audit_text`) reads one
file of a skill -- its ``SKILL.md``, a reference, a bundled script -- and returns
:class:`Finding` values: the rule, a severity (``low``, ``medium``, ``high``), the file, the
line, a short excerpt with control characters made visible, and a message saying what was
found. :data:`RULES` says why each rule matters. A skill's :func:`risk` is the highest
severity of its findings (``none`` without any).

The rules (ids in :data:`RULES`): instructions that override the user or the system
(``override.instructions``, ``override.conceal``); text hidden from a reader
(``hidden.invisible`` zero-width, tag and variation-selector characters, ``hidden.bidi``,
``hidden.control``, ``hidden.html-comment``, ``hidden.padding``, ``hidden.long-line``);
``exec.fetch-and-run`` (``curl … | sh``, ``iex (iwr …)``, ``eval "$(curl …)"``);
``exfil.secrets`` (``~/.ssh``, ``~/.aws``, ``.env``, the environment piped or posted out);
``exec.decode-and-run`` (``base64 -d | sh``, ``eval(atob(…))``) and ``encoded.blob``;
``destructive.command`` (``rm -rf /`` or ``~``, ``mkfs``, ``dd of=/dev/…``);
``tools.unrestricted-shell`` (``allowed-tools`` granting ``Bash`` without a pattern,
``Bash(*)``, an interpreter); ``exfil.request`` (a sentence asking the agent to send a key, a
credentials file or the environment to a URL); ``override.disclose`` (asking the agent to reveal
its instructions or the environment); ``secrets.hardcoded`` (a token in a known format; high when
something near it pushes or posts); ``hidden.link-text`` (instructions in a link title, an
image's alt text or a link reference definition); and, for a skill's other files,
``files.binary``, ``files.not-audited`` and ``files.outside-link`` (``skillshelf.supply.skill_audit``
reports those).

Every rule also runs on the text as a model reads it: invisible characters and bidi controls
removed, numeric HTML entities decoded, fullwidth letters folded, and shell variables set to a
plain value filled in where they are used. What is found only there is reported on its line, and
is high when invisible characters were hiding it. In a script or a code block, a download saved
to a file that a later line runs, and a value decoded or fetched into a variable that a later
line runs, are found across lines (a checksum checked in between makes the download medium).

Severity follows context, as a careful reader would:

- **hidden** text (inside an HTML comment outside code, past a run of padding, spelled in
  invisible tag characters, decoded from a base64 blob) makes any finding in it ``high``: a
  reader of the rendered page cannot see what the agent is told.
- a skill that **teaches** about prompt injection or secrets handling quotes the phrases: an
  override phrase in quotes, inline code, a code block, a table, a block quote, a passage or
  section about attacks, or a list in a skill whose own description is about security, is
  ``low``.
- a command shown as what **not** to do (its line, or the lines before it or before its code
  block, say never / avoid / dangerous / malicious…; or a section about attacks,
  anti-patterns or security) is ``low``.
- in a script there is no rendering and no quoting: commands keep their severity and an
  override phrase (text the script may print to the agent) is ``medium``.

Untrusted text, so every check is bounded and linear (see ``audit_patterns``): lines are
looked at only where a literal trigger occurs, at most 2,000 lines per rule and file are
analysed and at most 5 findings per rule and file are kept (the last says how many more).
Callers read files with ``files.read_bounded``; :data:`MAX_AUDIT_BYTES` is the cap for a
bundled file.
"""

from __future__ import annotations

from . import lexicon, patterns as P
from .intent_model import SentenceModel
from .rules import (
    RANK,
    RULES,
    RULES_VERSION,
    SEVERITIES,
    Finding,
    Rule,
    risk,
    severity_at_least,
    visible,
)
from .scan import Scan

__all__ = ["MAX_AUDIT_BYTES", "RANK", "RULES", "RULES_VERSION", "SEVERITIES", "Finding", "Rule", "audit_bytes",
           "audit_text", "file_kind", "risk", "security_topic_of", "severity_at_least", "visible"]

# A bundled file is audited up to this size (a SKILL.md up to files.MAX_SKILL_BYTES).
MAX_AUDIT_BYTES = 1_000_000

MARKDOWN_EXT = (".md", ".markdown", ".mdx", ".txt", ".rst")
SCRIPT_EXT = (".sh", ".bash", ".zsh", ".fish", ".ksh", ".py", ".pyw", ".js", ".mjs", ".cjs", ".ts", ".mts",
              ".cts", ".jsx", ".tsx", ".ps1", ".psm1", ".psd1", ".bat", ".cmd", ".rb", ".pl", ".pm", ".php",
              ".lua", ".r", ".go", ".rs", ".java", ".kt", ".swift", ".cs", ".vbs", ".applescript", ".scpt",
              ".awk", ".tcl", ".groovy", ".gradle", ".kts", ".mk", ".nu", ".ex", ".exs", ".cmake", ".vim", ".nix",
              ".hs", ".jl", ".bzl", ".star", ".el", ".wsf", ".sbt", ".scala", ".sc", ".clj", ".zig", ".dart", ".nim",
              ".erl", ".ml", ".fsx", ".csx", ".jsh", ".cr", ".rockspec", ".rprofile", ".podspec", ".gemspec")
SCRIPT_NAMES = {"makefile", "dockerfile", "justfile", "rakefile", "gemfile", "procfile", "cmakelists.txt", "vagrantfile",
                "jenkinsfile", ".vimrc", ".bashrc", ".zshrc", ".profile", ".bash_profile", "noxfile.py",
                "rprofile.site", ".rprofile",
                # task runners whose commands run as they are written (tox's commands, Task's cmds)
                "tox.ini", "taskfile.yml", "taskfile.yaml", "taskfile.dist.yml", "taskfile.dist.yaml",
                # Ruby's and Python's build files with no extension, run as code by their tools (CocoaPods, fastlane,
                # Danger, Bundler's kin, Capistrano, SCons, Snakemake, waf, Tilt)
                "podfile", "fastfile", "appfile", "matchfile", "pluginfile", "dangerfile", "brewfile", "guardfile",
                "berksfile", "capfile", "thorfile", "sconstruct", "sconscript", "snakefile", "wscript", "tiltfile"}


def file_kind(name: str, head: bytes | str = b"") -> str:
    """``markdown`` (rendered prose, where code blocks, comments and quotes mean something),
    ``script`` (run as it is) or ``text`` (data: JSON, YAML, HTML, …), from the file name
    and, for a name without a known extension, a ``#!`` first line."""
    low = name.lower().rsplit("/", 1)[-1]
    if low in SCRIPT_NAMES:
        return "script"
    if low.endswith(MARKDOWN_EXT):
        return "markdown"
    if isinstance(head, str):
        head = head[:2].encode()
    if low.endswith(SCRIPT_EXT) or low in SCRIPT_NAMES or head.startswith(b"#!"):
        return "script"
    return "text"


def _frontmatter(data: bytes) -> tuple[bytes, int] | None:
    """The frontmatter of a SKILL.md and its offset, or None."""
    if not data.startswith(b"---"):
        return None
    end = data.find(b"\n---", 3, 200_000)
    if end < 0:
        return None
    start = data.find(b"\n") + 1
    return data[start:end], start


def security_topic_of(skill_md: bytes | str) -> bool:
    """True when a SKILL.md's frontmatter (name, description, tags) is about security: quoting
    attacks is then what the skill teaches."""
    data = skill_md.encode("utf-8", "surrogatepass") if isinstance(skill_md, str) else skill_md
    fm = _frontmatter(data)
    return bool(fm and (P.SECURITY_TOPIC.search(fm[0][:4000].lower())
                        or lexicon.about_security(fm[0][:4000], data[:200_000])))


def _frontmatter_value(fm: bytes, keys: tuple[bytes, ...]) -> tuple[str | None, int]:
    """The raw value of a top-level key of frontmatter (inline, or the indented lines under
    it) and its offset. A line scan: the audit reads files that YAML refuses too."""
    pos = 0
    lines = fm.split(b"\n")
    for i, line in enumerate(lines):
        key, sep, rest = line.partition(b":")
        if sep and key.strip().lower() in keys and not line.startswith((b" ", b"\t")):
            parts = [rest.strip()]
            for nxt in lines[i + 1:i + 200]:
                if nxt.strip() and not nxt.startswith((b" ", b"\t", b"-")):
                    break
                parts.append(nxt.strip().lstrip(b"-").strip())
            return b" ".join(p for p in parts if p).decode("utf-8", "replace"), pos
        pos += len(line) + 1
    return None, 0


def _split_tools(value: str) -> list[str]:
    """``allowed-tools`` as a list: commas or spaces separate tools, except inside parentheses
    (``Bash(git add:*)``); YAML list brackets are dropped."""
    v = value.strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in v[:10_000]:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and (ch == "," or ch.isspace()):
            if cur:
                out.append("".join(cur))
                cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out[:200]


_SHELL_TOOLS = {"bash", "shell", "sh", "zsh", "powershell", "pwsh", "terminal", "run_shell_command", "execute_command",
                "run_terminal_cmd", "runterminalcommand", "exec", "command"}
_INTERPRETERS = {"python", "python3", "node", "deno", "bun", "perl", "ruby", "php", "bash", "sh", "zsh", "eval",
                 "sudo", "env", "xargs", "exec", "npx", "uvx", "pwsh", "powershell", "osascript", "source", "."}


def unrestricted_tool(tool: str) -> str | None:
    """Why an ``allowed-tools`` entry grants an unrestricted shell, or None (``Bash(git add:*)``
    is restricted to commands starting ``git add``)."""
    name, paren, rest = tool.strip().strip("'\"").partition("(")
    if name.strip().lower() not in _SHELL_TOOLS:
        return None
    if not paren:
        return "any shell command runs without asking"
    pattern = rest.rsplit(")", 1)[0].strip()
    if pattern in ("", "*", ":*", "*:*", "**") or pattern.startswith("*"):
        return "any shell command runs without asking"
    words = pattern.replace(":", " ").split()
    if words and words[0].lower() in _INTERPRETERS:
        return f"{words[0]} runs any code it is given"
    return None


def _check_allowed_tools(scan: Scan, fm: bytes, offset: int) -> None:
    value, at = _frontmatter_value(fm, (b"allowed-tools", b"allowed_tools"))
    if value is None:
        return
    grants = [f"{visible(t, 60)!r} ({why})" for t in _split_tools(value) if (why := unrestricted_tool(t))]
    if grants:
        scan.add("tools.unrestricted-shell", RULES["tools.unrestricted-shell"].severity, offset + at,
                 "allowed-tools grants " + ", ".join(grants[:5]))


def audit_bytes(data: bytes, file: str = "SKILL.md", *, kind: str | None = None,
                security_topic: bool | None = None, sentences: SentenceModel | None = None) -> list[Finding]:
    """The findings in one file of a skill, given its bytes (UTF-8; other bytes are read as
    U+FFFD where text matters).

    ``file`` is its path relative to the skill folder: it names the findings and, without
    ``kind``, decides how the text is read (:func:`file_kind`). ``security_topic``: the
    skill's own name and description are about security (a list of attack phrases is then
    teaching); worked out from the frontmatter of a SKILL.md when not given. ``sentences``: the
    learned model of intent (``intent_model.SentenceModel``), which reads prose the rules did not;
    without it the rules decide alone."""
    kind = kind or file_kind(file, data[:2])
    fm = _frontmatter(data) if kind == "markdown" else None
    if security_topic is None:
        security_topic = bool(fm) and security_topic_of(data)
    scan = Scan(data, file, kind, security_topic, sentences=sentences)
    if fm is not None and file.rsplit("/", 1)[-1].lower() == "skill.md":
        _check_allowed_tools(scan, fm[0], fm[1])
    return scan.run()


def audit_text(text: str, file: str = "SKILL.md", *, kind: str | None = None,
               security_topic: bool | None = None, sentences: SentenceModel | None = None) -> list[Finding]:
    """:func:`audit_bytes` of a text."""
    return audit_bytes(text.encode("utf-8", "surrogatepass"), file, kind=kind, security_topic=security_topic,
                       sentences=sentences)
