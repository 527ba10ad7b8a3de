"""Starting the MCP server from a command line, shared by the console script's fast path
(:mod:`skillshelf.entry`, which parses ``serve`` itself) and the ``serve`` command of the CLI.
It imports no CLI toolkit (typer, rich): an MCP client waits for the server's first answer."""

from __future__ import annotations

import argparse
import sys


def serve(ns: argparse.Namespace) -> None:
    """Start the MCP server from parsed arguments (``home``, ``root``, ``client_roots``,
    ``http``, ``host``, ``port``, ``write_policy``, and ``store`` where given: a team store
    over SKILLSHELF_STORE and config.toml). Every problem found before it starts is one line
    on stderr: exit 2 for a bad argument, 1 for anything else (a port in use, an unusable
    home, a team store that cannot be opened)."""
    import os

    from ..errors import SkillshelfError

    try:
        from ..config import ensure_home, load

        if ns.http:
            _check_port(ns.host, ns.port)
        cfg = load(ns.home or os.environ.get("SKILLSHELF_HOME"), roots=ns.root or None,
                   client_roots=ns.client_roots, write_policy=ns.write_policy, store=getattr(ns, "store", None))
        # a typo in SKILLSHELF_HOME must not look like an empty library (on a team store the
        # library is the store's: the home only holds this server's copy)
        note = ensure_home(cfg)
        if note and not cfg.store:
            print(f"skillshelf: note: {note}", file=sys.stderr)
        for m in cfg.missing_roots():   # stderr: stdout is the protocol
            print(f"skillshelf: warning: {m.message}; left out — {m.fix}", file=sys.stderr)
        from .server import serve as serve_mcp

        def factory():
            from ..library import Library

            return Library(config=cfg, client="mcp")

        serve_mcp(factory, http=ns.http, host=ns.host, port=ns.port, token=cfg.http_token, team=bool(cfg.store))
    except BadArgument as exc:
        print(f"error: {exc} — see `skillshelf serve --help`", file=sys.stderr)
        sys.exit(2)
    except SkillshelfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


class BadArgument(Exception):
    """A serve argument that can never work (exit 2)."""


def _check_port(host: str, port: int) -> None:
    """Refuse, before anything else is said: a port outside 1-65535 (a usage error, exit 2),
    and a host and port this process cannot listen on (``ConfigError``). The server binds
    again itself before it prints its URL, so a port taken in between is one line too."""
    from ..net import bind_socket

    if not 1 <= port <= 65535:
        raise BadArgument(f"port {port} is out of range: use a port from 1 to 65535 (default 8765)")
    bind_socket(host, port, default_port=8765).close()
