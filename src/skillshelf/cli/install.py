"""Connecting an agent client: ``install`` and ``uninstall`` (our server entry in the client's
configuration file, and the teaching skill in its skills folder)."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, Optional

import typer

from .common import _config, _json, _write, err, out, state

commands = typer.Typer()

# the clients the library knows (a test keeps them equal to the library's list): the list
# is written here so that the CLI loads nothing of the library to parse a command line
CLIENT_NAMES = ("claude-code", "claude-desktop", "cursor", "vscode", "codex", "gemini", "goose")
ClientName = enum.Enum("ClientName", {n.replace("-", "_"): n for n in CLIENT_NAMES}, type=str)  # type: ignore[misc]


class Scope(str, enum.Enum):
    user = "user"
    project = "project"


CLIENT_HELP = "one of: " + ", ".join(CLIENT_NAMES)


def _show_config_change(ch: Any, dry_run: bool) -> None:
    c = ch.client
    out.print(f"{c.title} ({ch.scope} scope): {ch.path}")
    if dry_run and ch.changed:
        _write(ch.diff())
    words = {"add": "added the skillshelf server", "update": "updated the skillshelf server entry",
             "unchanged": "the skillshelf entry is already there: nothing to change",
             "remove": "removed the skillshelf server entry (other servers and settings are kept)",
             "absent": "no skillshelf entry there: nothing to remove"}
    would = {"add": "would add the skillshelf server", "update": "would update the skillshelf server entry",
             "remove": "would remove the skillshelf server entry (other servers and settings are kept)"}
    verb = would[ch.action] if dry_run and ch.changed else words[ch.action]
    out.print(f"  {verb}")
    entry = ch.shown_entry()     # (a token or a password in it shown as <hidden>)
    if entry is not None and ch.action in ("add", "update", "unchanged"):
        cmd = entry.get("command") or entry.get("cmd")
        args = entry.get("args") or []
        out.print(f"  command: {' '.join([str(cmd), *map(str, args)])}")
        env = entry.get("env") or entry.get("envs") or {}
        if env:
            out.print("  env: " + " ".join(f"{k}={v}" for k, v in env.items()))
    if ch.backup is not None:
        out.print(f"  backup of the previous file: {ch.backup}")
    for n in ch.notes:
        out.print(f"  note: {n}")


def _show_skill_change(sk: Any, dry_run: bool) -> None:
    if sk.dest is None:
        out.print(f"teaching skill: {sk.hint}")
        return
    if dry_run and sk.action == "update":   # a new or removed file is the packaged skill: named, not printed
        _write(sk.diff())
    words = {"create": "installed", "update": "updated (the previous one is kept as a backup)",
             "unchanged": "already installed", "remove": "removed", "absent": "not installed: nothing to remove",
             "keep": "left in place"}
    what = words.get(sk.action, sk.action)
    if dry_run and sk.action in ("create", "update", "remove"):
        what = f"would be {what.split(' (')[0]}"
    out.print(f"teaching skill {sk.name}: {what} — {sk.dest}")
    if sk.backup is not None:
        out.print(f"  backup: {sk.backup}")
    if sk.hint:
        out.print(f"  note: {sk.hint}")


def _print_entry(ch: Any, json_out: bool) -> None:
    """``install --print``: the entry on stdout, alone (it can be piped or pasted); where it
    goes, and for Claude Code its own command, on stderr."""
    cmd = ch.command_line()
    if json_out:
        _json({"client": ch.client.name, "scope": ch.scope, "config": str(ch.path), "key": ch.client.key,
               "entry": ch.shown_entry(), "snippet": ch.snippet(), "command": cmd})
        return
    _write(ch.snippet())
    err.print(f"{ch.client.title} ({ch.scope} scope): put it under {ch.client.key} in {ch.path}, "
              f"or let `skillshelf install {ch.client.name}` merge it there (a backup first)")
    if cmd:
        err.print(f"or run: {cmd}")
    if ch.private:
        err.print("the entry holds your token, shown as <hidden>: put yours in its place, or let `install` "
                  "write it (the file is then readable by you only)")


@commands.command()
def install(
    ctx: typer.Context,
    client: ClientName = typer.Argument(..., metavar="CLIENT", help=CLIENT_HELP),  # type: ignore[valid-type]
    scope: Scope = typer.Option(Scope.user, "--scope", help="user: the client's own settings (every project); "
                                                           "project: the project folder's settings"),
    project: Optional[Path] = typer.Option(None, "--project", metavar="DIR",
                                           help="the project folder for --scope project (default: this folder)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the changes as a diff and write nothing"),
    print_entry: bool = typer.Option(False, "--print", help="print our entry as it would be written (this "
                                                           "installation's absolute path), to paste into the "
                                                           "client's file by hand; write nothing"),
    no_skill: bool = typer.Option(False, "--no-skill", help="do not install the teaching skill using-skillshelf"),
    write_policy: Optional[str] = typer.Option(None, "--write-policy", metavar="POLICY",
                                               help="read-only | propose | open, set for this client's server "
                                                    "(default: the library's setting)"),
    token: Optional[str] = typer.Option(None, "--token", envvar="SKILLSHELF_TOKEN", show_envvar=True,
                                        help="on a team store: the token the client's server acts as (your own, "
                                             "from `skillshelf tokens add`); better set in SKILLSHELF_TOKEN than "
                                             "typed, so it stays out of the shell's history"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Add the skillshelf MCP server to an agent client's configuration (merged into the file,
    other servers kept, a backup written first) and put the teaching skill in its skills folder.
    On a team store the entry carries your token (the file is then made readable by you only)."""
    from ..library import Library

    cfg = _config()
    token = (token or "").strip() or None
    source = ctx.get_parameter_source("token")      # (an enum of the click copy typer runs on)
    if not cfg.store and getattr(source, "name", "") == "ENVIRONMENT":
        token = None    # a team user's SKILLSHELF_TOKEN in this shell: not for a local library's client
    done = Library.install_client(client.value, scope.value, config=cfg, project=project, write_policy=write_policy,
                                  skill=not (no_skill or print_entry), dry_run=dry_run or print_entry, token=token)
    if print_entry:
        _print_entry(done.config, json_out)
        return
    if json_out:
        _json(done.as_dict())
        return
    ch, sk = done.config, done.skill
    _show_config_change(ch, dry_run)
    if sk is not None:
        _show_skill_change(sk, dry_run)
    if ch.private and ch.changed and not dry_run:
        out.print(f"  the entry holds a secret (your token): {ch.path.name} is now readable by you only")
    if state.roots:
        err.print("note: --root applies to one command; the server will not see it: save roots with "
                  "`skillshelf roots add PATH`")
    if dry_run:
        out.print("dry run: nothing was written")
    elif ch.changed or (sk is not None and sk.action in ("create", "update")):
        out.print(f"next: {done.client.reload}")


@commands.command()
def uninstall(
    client: ClientName = typer.Argument(..., metavar="CLIENT", help=CLIENT_HELP),  # type: ignore[valid-type]
    scope: Scope = typer.Option(Scope.user, "--scope", help="user | project (as it was installed)"),
    project: Optional[Path] = typer.Option(None, "--project", metavar="DIR",
                                           help="the project folder for --scope project (default: this folder)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the changes as a diff and write nothing"),
    keep_skill: bool = typer.Option(False, "--keep-skill", help="leave the teaching skill installed"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Remove only the skillshelf entry from a client's configuration (a backup is written
    first), and the teaching skill skillshelf installed (unless it was edited)."""
    from ..library import Library

    done = Library.uninstall_client(client.value, scope.value, project=project, skill=not keep_skill, dry_run=dry_run)
    if json_out:
        _json(done.as_dict())
        return
    ch, sk = done.config, done.skill
    _show_config_change(ch, dry_run)
    if sk is not None and sk.dest is not None:
        _show_skill_change(sk, dry_run)
    if dry_run:
        out.print("dry run: nothing was written")
    elif ch.changed:
        out.print(f"next: {done.client.reload}")
