"""Agent clients: where each keeps its MCP server list and its skills folder, and how our
entry is merged into (or removed from) that file.

Every client keeps a file of its own format (JSON, JSONC, TOML, YAML; read and written by
:mod:`skillshelf.onboarding.configtext`). A change is planned first (:func:`plan_install`,
:func:`plan_uninstall`): the file's text before and after, so a dry run can print the diff
and a re-install that changes nothing writes nothing. :func:`apply` then writes a backup of
the previous file (``<file>.bak-<stamp>``) and the new text atomically (in
:mod:`skillshelf.onboarding.client_files`). Other servers and keys are kept; so are keys the user added
to our own entry.

Only the standard library is imported here at module level.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ValidationError
from . import configtext

SERVER_NAME = "skillshelf"
TEACHING_SKILL = "using-skillshelf"
# Environment variables our entry manages: set from this install, removed when not wanted.
# Any other variable the user put in the entry is kept.
MANAGED_ENV = ("SKILLSHELF_HOME", "SKILLSHELF_WRITE_POLICY", "SKILLSHELF_STORE", "SKILLSHELF_TOKEN")
# ~/.claude.json holds Claude Code's whole state (projects, history): tens of MB at most.
MAX_CONFIG_BYTES = 64_000_000
SCOPES = ("user", "project")


# --- where things are ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Where:
    """The user's home, environment and platform: every location is derived from these,
    so tests pass a temporary home and an environment of their own."""

    home: Path
    env: Mapping[str, str] = field(default_factory=dict)
    platform: str = sys.platform

    @classmethod
    def current(cls) -> "Where":
        return cls(Path.home(), dict(os.environ), sys.platform)

    def config_home(self) -> Path:
        """XDG_CONFIG_HOME, else ~/.config (Linux and the tools that follow XDG elsewhere)."""
        x = self.env.get("XDG_CONFIG_HOME")
        return Path(x) if x and os.path.isabs(x) else self.home / ".config"

    def appdata(self) -> Path:
        a = self.env.get("APPDATA")
        return Path(a) if a else self.home / "AppData" / "Roaming"

    def app_support(self) -> Path:
        return self.home / "Library" / "Application Support"


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    fmt: str                    # json | toml | yaml
    key: str                    # the table of servers in the file
    user_config: Callable[[Where], Path] | None
    project_config: Callable[[Path], Path] | None
    user_skills: Callable[[Where], Path] | None
    project_skills: Callable[[Path], Path] | None
    reload: str                 # how the client picks up the change
    jsonc: bool = False         # the client reads JSON with comments and trailing commas
    no_skills: str = ""         # what to do where the client has no skills folder
    project_note: str = ""      # said when writing its project file

    def scopes(self) -> list[str]:
        return [s for s, f in (("user", self.user_config), ("project", self.project_config)) if f is not None]

    def config_path(self, scope: str, where: Where, project: Path) -> Path:
        self._check_scope(scope)
        return self.user_config(where) if scope == "user" else self.project_config(project)  # type: ignore[misc]

    def skills_dir(self, scope: str, where: Where, project: Path) -> Path | None:
        """The client's skills folder for the scope (None: it has none)."""
        if scope == "user":
            return self.user_skills(where) if self.user_skills else None
        return self.project_skills(project) if self.project_skills else None

    def _check_scope(self, scope: str) -> None:
        if scope not in SCOPES:
            raise ValidationError(f"unknown scope {scope!r}", fix="use --scope user or --scope project")
        if scope not in self.scopes():
            raise ValidationError(f"{self.title} has no {scope} configuration",
                                  fix=f"use --scope {self.scopes()[0]}")


def _claude_dir(w: Where) -> Path:
    d = w.env.get("CLAUDE_CONFIG_DIR")
    return Path(d).expanduser() if d else w.home / ".claude"


def _claude_json(w: Where) -> Path:
    d = w.env.get("CLAUDE_CONFIG_DIR")
    return Path(d).expanduser() / ".claude.json" if d else w.home / ".claude.json"


def _claude_desktop(w: Where) -> Path:
    if w.platform == "darwin":
        return w.app_support() / "Claude" / "claude_desktop_config.json"
    if w.platform.startswith("win"):
        return w.appdata() / "Claude" / "claude_desktop_config.json"
    return w.config_home() / "Claude" / "claude_desktop_config.json"


def _vscode_user(w: Where) -> Path:
    if w.platform == "darwin":
        return w.app_support() / "Code" / "User" / "mcp.json"
    if w.platform.startswith("win"):
        return w.appdata() / "Code" / "User" / "mcp.json"
    return w.config_home() / "Code" / "User" / "mcp.json"


def _codex_home(w: Where) -> Path:
    d = w.env.get("CODEX_HOME")
    return Path(d).expanduser() if d else w.home / ".codex"


def _goose_config(w: Where) -> Path:
    if w.platform.startswith("win"):
        return w.appdata() / "Block" / "goose" / "config" / "config.yaml"
    return w.config_home() / "goose" / "config.yaml"


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("claude-code", "Claude Code", "json", "mcpServers",
           user_config=_claude_json, project_config=lambda p: p / ".mcp.json",
           user_skills=lambda w: _claude_dir(w) / "skills", project_skills=lambda p: p / ".claude" / "skills",
           reload="restart Claude Code, then check with `claude mcp list` or /mcp",
           project_note=".mcp.json is usually committed: the command path in it is this machine's"),
    Client("claude-desktop", "Claude Desktop", "json", "mcpServers",
           user_config=_claude_desktop, project_config=None, user_skills=None, project_skills=None,
           reload="quit and reopen Claude Desktop",
           no_skills="Claude Desktop reads skills uploaded in its settings, not from a folder: zip the folder {src}"
                     " and add it under Settings → Capabilities → Skills, or start a chat with the MCP prompt"
                     " use-skills"),
    Client("cursor", "Cursor", "json", "mcpServers",
           user_config=lambda w: w.home / ".cursor" / "mcp.json", project_config=lambda p: p / ".cursor" / "mcp.json",
           user_skills=lambda w: w.home / ".cursor" / "skills", project_skills=lambda p: p / ".cursor" / "skills",
           reload="reload Cursor's window; the server shows under Settings → MCP"),
    Client("vscode", "VS Code", "json", "servers", jsonc=True,
           user_config=_vscode_user, project_config=lambda p: p / ".vscode" / "mcp.json",
           user_skills=lambda w: w.home / ".copilot" / "skills", project_skills=lambda p: p / ".github" / "skills",
           reload="run \"MCP: List Servers\" in VS Code and start skillshelf (agent mode)"),
    Client("codex", "Codex", "toml", "mcp_servers",
           user_config=lambda w: _codex_home(w) / "config.toml", project_config=lambda p: p / ".codex" / "config.toml",
           user_skills=lambda w: w.home / ".agents" / "skills", project_skills=lambda p: p / ".agents" / "skills",
           reload="start a new Codex session; `codex mcp list` shows the server",
           project_note="Codex reads .codex/config.toml only in a project you have marked as trusted"),
    Client("gemini", "Gemini CLI", "json", "mcpServers", jsonc=True,
           user_config=lambda w: w.home / ".gemini" / "settings.json",
           project_config=lambda p: p / ".gemini" / "settings.json",
           user_skills=lambda w: w.home / ".gemini" / "skills", project_skills=lambda p: p / ".gemini" / "skills",
           reload="start a new Gemini CLI session; /mcp lists the server"),
    Client("goose", "Goose", "yaml", "extensions",
           user_config=_goose_config, project_config=None,
           user_skills=lambda w: w.config_home() / "goose" / "skills", project_skills=lambda p: p / ".goose" / "skills",
           reload="start a new Goose session; the extension is enabled in config.yaml"),
)}


def get_client(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValidationError(f"unknown client {name!r}", fix=f"use one of {', '.join(CLIENTS)}") from None


# --- the server entry -----------------------------------------------------------------------------

def server_command(argv0: str | None = None, executable: str | None = None) -> tuple[str, list[str]]:
    """The absolute command that starts this installation's ``skillshelf``, so a client
    finds it without the virtual environment being active: the console script running now,
    else the one beside this Python, else one on PATH, else ``python -m skillshelf.entry``."""
    import shutil

    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = executable or sys.executable
    if argv0 and Path(argv0).name in ("skillshelf", "skillshelf.exe"):
        p = Path(argv0)
        if not p.is_absolute():
            found = shutil.which(argv0) if os.sep not in argv0 else None
            p = Path(found) if found else p.absolute()
        if p.is_file():
            return str(p), []
    beside = Path(executable).with_name("skillshelf.exe" if os.name == "nt" else "skillshelf")
    if beside.is_file():
        return str(beside.absolute()), []
    found = shutil.which("skillshelf")
    if found:
        return str(Path(found).absolute()), []
    return str(Path(executable).absolute()), ["-m", "skillshelf.entry"]


def entry_for(client: Client, command: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Our server entry in the client's own shape."""
    if client.name == "goose":
        return {"enabled": True, "type": "stdio", "name": SERVER_NAME, "cmd": command, "args": list(args),
                "envs": dict(env), "env_keys": [], "timeout": 300,
                "description": "skillshelf: search, read and report on agent skills", "bundled": None}
    e: dict[str, Any] = {}
    if client.name in ("claude-code", "vscode"):
        e["type"] = "stdio"
    e["command"] = command
    e["args"] = list(args)
    if env:
        e["env"] = dict(env)
    return e


# keys of our entry that the user may have tuned: set only when absent
_DEFAULT_ONLY = {"timeout", "description", "env_keys", "bundled"}


def merge_entry(existing: Any, ours: dict[str, Any], env_key: str) -> dict[str, Any]:
    """Our entry over the one already there: our keys are set (tunables only when absent),
    keys the user added are kept, and of the environment only ``MANAGED_ENV`` is ours."""
    if not isinstance(existing, dict):
        return dict(ours)
    out = dict(existing)
    for k, v in ours.items():
        if k == env_key or (k in _DEFAULT_ONLY and k in out):
            continue
        out[k] = v
    old_env = existing.get(env_key)
    env = {k: v for k, v in old_env.items() if k not in MANAGED_ENV} if isinstance(old_env, dict) else {}
    env.update(ours.get(env_key) or {})
    if env or env_key in ours or old_env == {}:
        out[env_key] = env      # an empty table the file had stays: no change for nothing
    else:
        out.pop(env_key, None)
    return out


# --- plans ----------------------------------------------------------------------------------------

@dataclass
class ConfigChange:
    """What installing (or removing) our entry does to one client file."""

    client: Client
    scope: str
    path: Path
    action: str                  # add | update | unchanged | remove | absent
    before: str | None           # the file's text (None: no file)
    after: str | None            # the text to write (None: nothing to write)
    entry: dict[str, Any] | None
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None   # set by apply
    old: dict[str, Any] | None = None   # our entry as the file had it (None: none)

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after != self.before

    # A team token and a store URL (it may carry a password) are secrets: never printed (the
    # diff, the entry, --json show <hidden>), and a file (or backup) that holds one is written
    # readable by its owner only.
    @property
    def private(self) -> bool:
        """The file as written holds a secret of ours."""
        return self.action in ("add", "update", "unchanged") and bool(_secrets_of(self.entry))

    @property
    def held_private(self) -> bool:
        """The file as it was held a secret of ours (its backup must not be readable by others)."""
        return bool(_secrets_of(self.old))

    def hide(self, text: str) -> str:
        """``text`` with our secrets hidden: the value on each line that sets one (whatever the
        format's quoting or escaping), and any other place a known one stands."""
        known = [v for v in _secrets_of(self.entry) + _secrets_of(self.old) if len(v) >= 8]
        out = []
        for line in text.splitlines(keepends=True):
            m = _SECRET_LINE.search(line)
            if m:
                line = line[:m.start(2)] + "<hidden>" + ("\n" if line.endswith("\n") else "")
            for v in known:
                line = line.replace(v, "<hidden>")
            out.append(line)
        return "".join(out)

    def shown_entry(self) -> dict[str, Any] | None:
        """The entry as it may be printed (secrets hidden)."""
        return _hidden_entry(self.entry)

    def snippet(self) -> str:
        """Our entry as a piece of the client's own file (its table of servers with ours alone),
        secrets hidden: what ``install --print`` shows, to paste by hand."""
        entry = _hidden_entry(self.entry) or {}
        c = self.client
        text, _ = configtext.render(c.fmt, c.key, SERVER_NAME, self.path, "", {c.key: {SERVER_NAME: entry}}, entry)
        return text

    def command_line(self) -> str | None:
        """Claude Code's own command that adds the same entry (``claude mcp add``); None for
        the other clients, which are configured by their file only."""
        import shlex

        entry = _hidden_entry(self.entry)
        if self.client.name != "claude-code" or entry is None:
            return None
        env = [f"-e {shlex.quote(f'{k}={v}')}" for k, v in (entry.get("env") or {}).items()]
        run = [str(entry.get("command")), *map(str, entry.get("args") or [])]
        return " ".join(["claude mcp add --scope", self.scope, SERVER_NAME, *env, "--", *map(shlex.quote, run)])

    def diff(self) -> str:
        if not self.changed:
            return ""
        return self.hide("".join(difflib.unified_diff((self.before or "").splitlines(keepends=True),
                                                      (self.after or "").splitlines(keepends=True),
                                                      fromfile=str(self.path) if self.before is not None
                                                      else "/dev/null", tofile=str(self.path))))


SECRET_ENV = ("SKILLSHELF_TOKEN", "SKILLSHELF_STORE")
# a line of a client's file (JSON, TOML, YAML) that sets one of them: the key, then its value
_SECRET_LINE = re.compile(r"""(["']?\b(?:SKILLSHELF_TOKEN|SKILLSHELF_STORE)\b["']?\s*[:=]\s*)(\S.*?)\s*$""")


def _env_of(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {}
    env = entry.get("env", entry.get("envs"))
    return env if isinstance(env, dict) else {}


def _secrets_of(entry: Any) -> list[str]:
    env = _env_of(entry)
    return [str(env[k]) for k in SECRET_ENV if env.get(k)]


def _hidden_entry(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    out = dict(entry)
    for key in ("env", "envs"):
        if isinstance(out.get(key), dict):
            out[key] = {k: ("<hidden>" if k in SECRET_ENV and v else v) for k, v in out[key].items()}
    return out


@dataclass
class SkillChange:
    """What happens to the teaching skill in the client's skills folder."""

    dest: Path | None            # the SKILL.md (None: the client has no skills folder)
    action: str                  # create | update | unchanged | remove | keep | absent | none
    before: str | None = None
    after: str | None = None
    hint: str = ""
    backup: Path | None = None
    name: str = TEACHING_SKILL

    def diff(self) -> str:
        if self.action not in ("create", "update", "remove") or self.dest is None:
            return ""
        return "".join(difflib.unified_diff((self.before or "").splitlines(keepends=True),
                                            (self.after or "").splitlines(keepends=True),
                                            fromfile=str(self.dest) if self.before is not None else "/dev/null",
                                            tofile=str(self.dest) if self.after is not None else "/dev/null"))


def _read_config(path: Path) -> str | None:
    from ..files import FileRefused, read_bounded

    if not path.exists() and not path.is_symlink():
        return None
    try:
        raw = read_bounded(path, MAX_CONFIG_BYTES)
    except FileRefused as exc:
        raise ConfigError(f"{exc.message}", fix=f"make {path} a regular file (or move it aside); "
                                                "nothing was written") from None
    except FileNotFoundError:
        if path.is_symlink():
            raise ConfigError(f"{path} is a link to a file that does not exist",
                              fix="fix or remove the link; nothing was written") from None
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}",
                          fix="check its permissions; nothing was written") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start})",
                          fix=f"fix {path} (or move it aside); nothing was written") from None


def _split_bom(text: str) -> tuple[str, str]:
    """(the byte-order mark, or "", and the text after it): parsers refuse a BOM; the file keeps it."""
    return ("\ufeff", text[1:]) if text.startswith("\ufeff") else ("", text)


def _table(data: dict[str, Any], client: Client, path: Path) -> dict[str, Any]:
    t = data.get(client.key)
    if t is None:
        return {}
    if not isinstance(t, dict):
        raise ConfigError(f"{path}: {client.key} is a {type(t).__name__}, not an object of servers",
                          fix=f"make {client.key} an object (or remove it) and run the command again; "
                              "nothing was written")
    return t


def plan_install(client: Client, scope: str, *, where: Where, project: Path, command: str, args: list[str],
                 env: dict[str, str]) -> ConfigChange:
    path = client.config_path(scope, where, project)
    before = _read_config(path)
    bom, text = _split_bom(before or "")
    data, notes = configtext.parse(client.fmt, text, path, jsonc=client.jsonc)
    table = _table(data, client, path)
    ours = entry_for(client, command, args, env)
    env_key = "envs" if client.name == "goose" else "env"
    old = table.get(SERVER_NAME)
    merged = merge_entry(old, ours, env_key)
    if SERVER_NAME in table and old == merged:
        return ConfigChange(client, scope, path, "unchanged", before, None, merged, old=old)
    action = "update" if SERVER_NAME in table else "add"
    new_data = dict(data)
    new_table = dict(table)
    new_table[SERVER_NAME] = merged
    new_data[client.key] = new_table
    after, more = configtext.render(client.fmt, client.key, SERVER_NAME, path, text, new_data, merged)
    after = bom + after
    if scope == "project" and client.project_note:
        notes.append(client.project_note)
    gone = [k for k in SECRET_ENV if k in _env_of(old) and k not in _env_of(merged)]
    if gone:
        notes.append(f"the entry no longer carries {' and '.join(gone)}: its server opens this (local) library; "
                     "install with --store URL (and your token) to keep the team store")
    return ConfigChange(client, scope, path, action, before, after, merged, notes + more, old=old)


def plan_uninstall(client: Client, scope: str, *, where: Where, project: Path) -> ConfigChange:
    path = client.config_path(scope, where, project)
    before = _read_config(path)
    if before is None:
        return ConfigChange(client, scope, path, "absent", None, None, None)
    bom, text = _split_bom(before)
    data, notes = configtext.parse(client.fmt, text, path, jsonc=client.jsonc)
    table = _table(data, client, path)
    if SERVER_NAME not in table:
        return ConfigChange(client, scope, path, "absent", before, None, None)
    new_data = dict(data)
    new_table = {k: v for k, v in table.items() if k != SERVER_NAME}
    new_data[client.key] = new_table
    after, more = configtext.render(client.fmt, client.key, SERVER_NAME, path, text, new_data, None)
    after = bom + after
    return ConfigChange(client, scope, path, "remove", before, after, table[SERVER_NAME], notes + more,
                        old=table[SERVER_NAME])


def teaching_skill_source() -> Path:
    """The folder of the teaching skill shipped in the package."""
    from importlib import resources

    return Path(str(resources.files("skillshelf") / "skills" / TEACHING_SKILL))


def copy_samples(workspace: Path, names: tuple[str, ...]) -> None:
    """Copy the sample skills that ship with skillshelf into a new library's workspace (a sample
    already there is left as it is)."""
    from importlib import resources

    for name in names:
        dest = workspace / name / "SKILL.md"
        if dest.exists():
            continue
        src = resources.files("skillshelf") / "samples" / name / "SKILL.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")


def teaching_skill_text() -> str:
    return (teaching_skill_source() / "SKILL.md").read_text(encoding="utf-8")


def plan_skill(client: Client, scope: str, *, where: Where, project: Path, remove: bool = False) -> SkillChange:
    folder = client.skills_dir(scope, where, project)
    src = teaching_skill_source()
    if folder is None:
        return SkillChange(None, "none", hint=client.no_skills.format(src=src))
    dest = folder / TEACHING_SKILL / "SKILL.md"
    ours = teaching_skill_text()
    before = _read_config(dest)
    if remove:
        if before is None:
            return SkillChange(dest, "absent")
        if before != ours:
            return SkillChange(dest, "keep", before=before,
                               hint=f"left {dest}: it differs from the teaching skill this version ships "
                                    "(edited, or from another version); delete it by hand if you want it gone")
        return SkillChange(dest, "remove", before=before, after=None)
    if before == ours:
        return SkillChange(dest, "unchanged", before=before, after=ours)
    return SkillChange(dest, "create" if before is None else "update", before=before, after=ours)


# --- install and uninstall: plan, then apply unless it is a dry run --------------------------------

@dataclass
class Installation:
    """What ``install`` or ``uninstall`` did to one client (in a dry run: would do): its
    configuration file, and the teaching skill in its skills folder (None: left out)."""

    config: ConfigChange
    skill: SkillChange | None
    dry_run: bool

    @property
    def client(self) -> Client:
        return self.config.client

    def as_dict(self) -> dict[str, Any]:
        ch, sk = self.config, self.skill
        d: dict[str, Any] = {"client": ch.client.name, "scope": ch.scope, "config": str(ch.path),
                             "action": ch.action, "changed": ch.changed, "dry_run": self.dry_run, "entry": ch.shown_entry(),
                             "backup": str(ch.backup) if ch.backup else None, "notes": ch.notes}
        if self.dry_run:
            d["diff"] = ch.diff()
        if sk is not None:
            d["skill"] = {"path": str(sk.dest) if sk.dest else None, "action": sk.action, "hint": sk.hint or None,
                          "backup": str(sk.backup) if sk.backup else None}
        return d


def project_folder(project: Path | None) -> Path:
    """The project folder for a project scope: the one given (it must exist), else this one."""
    p = (project or Path.cwd()).expanduser().absolute()
    if project is not None and not p.is_dir():
        from ..errors import NotFoundError

        raise NotFoundError(f"the project folder {p} does not exist", fix="pass an existing folder to --project")
    return p


def server_env(config: Any, write_policy: str | None, token: str | None = None) -> dict[str, str]:
    """What the client must pass to the server: the home and the store when they come from this
    shell (the client does not see its --home, --store or SKILLSHELF_* variables), a write
    policy when one is asked for, and on a team store the token the server acts as."""
    from ..config import WRITE_POLICIES

    env: dict[str, str] = {}
    if config.origin("home") in ("flag", "environment"):
        env["SKILLSHELF_HOME"] = str(config.home)
    if config.store and config.origin("store") in ("flag", "environment"):
        env["SKILLSHELF_STORE"] = config.store
    if token:
        env["SKILLSHELF_TOKEN"] = token
    if write_policy is not None:
        if write_policy not in WRITE_POLICIES:
            raise ValidationError(f"unknown write policy {write_policy!r}",
                                  fix=f"use one of {', '.join(WRITE_POLICIES)}")
        env["SKILLSHELF_WRITE_POLICY"] = write_policy
    return env


def install(client: str, scope: str, *, config: Any, project: Path | None = None, write_policy: str | None = None,
            skill: bool = True, dry_run: bool = False, where: Where | None = None,
            token: str | None = None) -> Installation:
    """Add our server entry to the client's configuration for ``scope`` (merged into the file,
    other servers kept, a backup written first) and, with ``skill``, put the teaching skill in
    its skills folder. ``config``: the library's settings (its home goes into the entry when
    it is not the default one). ``token``: on a team store, the token the client's server acts
    as (required there, and checked against the store). A dry run plans and writes nothing."""
    from ..errors import ConfigError

    c = get_client(client)
    proj = project_folder(project)
    token = (token or "").strip() or None
    if config.store and not token:
        raise ConfigError("a server on a team store acts as one person's token, and no token was given",
                          fix="pass --token (or set SKILLSHELF_TOKEN) with your own token; an admin makes one with "
                              "`skillshelf tokens add NAME --role ROLE`")
    if token and not config.store:
        raise ValidationError("--token is for a team store, and this library is local",
                              fix="leave out --token, or pass --store URL (or set store in the config)")
    if token and scope == "project":
        raise ValidationError("a token in a project's settings file is shared with everyone who reads the project "
                              "(such files are often committed)",
                              fix="install with --scope user (your own settings); or give the team an HTTP server, "
                                  "each person sending their own token")
    if token:
        _check_token(config.store, token)
    env = server_env(config, write_policy, token)
    command, prefix = server_command()
    where = where or Where.current()
    ch = plan_install(c, scope, where=where, project=proj, command=command, args=[*prefix, "serve"], env=env)
    sk = plan_skill(c, scope, where=where, project=proj) if skill else None
    if not dry_run:
        apply(ch)
        if sk is not None:
            apply_skill(sk)
    return Installation(ch, sk, dry_run)


def _check_token(url: str, token: str) -> None:
    """Refuse a token the team store does not know: in the client it would fail on every call."""
    from ..store.postgres import PgStore
    from ..store.tokens import Tokens

    pg = PgStore(url, max_size=1)
    try:
        known = Tokens(pg).verify(token)
    finally:
        pg.close()
    if known is None:
        raise ConfigError("the team store does not know this token (mistyped, or revoked)",
                          fix="use your own token: an admin makes one with `skillshelf tokens add NAME --role ROLE`")


def uninstall(client: str, scope: str, *, project: Path | None = None, skill: bool = True, dry_run: bool = False,
              where: Where | None = None) -> Installation:
    """Remove only our entry from the client's configuration (a backup is written first) and,
    with ``skill``, the teaching skill we installed (unless it was edited)."""
    c = get_client(client)
    proj = project_folder(project)
    where = where or Where.current()
    ch = plan_uninstall(c, scope, where=where, project=proj)
    sk = plan_skill(c, scope, where=where, project=proj, remove=True) if skill else None
    if not dry_run:
        apply(ch)
        if sk is not None:
            apply_skill(sk)
    return Installation(ch, sk, dry_run)


def skills_folder(client: str, scope: str, project: Path, where: Where | None = None) -> tuple[Client, Path]:
    """The client and its skills folder for ``scope``; an error naming the way out when the
    client has none (Claude Desktop takes uploaded skills only)."""
    c = get_client(client)
    dest = c.skills_dir(scope, where or Where.current(), project)
    if dest is None:
        raise ValidationError(f"{c.title} has no {scope} skills folder",
                              fix="install into another client, or upload the skills in its settings")
    return c, dest


# writing what was planned (a backup first, then the new text atomically)
from .client_files import CopyResult, apply, apply_skill, backup_path, copy_skill_folders, write_backup  # noqa: E402,F401
