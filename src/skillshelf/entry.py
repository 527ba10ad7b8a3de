"""The console script. ``skillshelf serve`` is started without importing the CLI
toolkit (typer, rich): an MCP client waits for the server's first answer, and those
imports would add ~0.2 s to it. Everything else goes to :mod:`skillshelf.cli`."""

from __future__ import annotations

import argparse
import sys


class _NotServe(Exception):
    """The arguments are not a well-formed ``serve`` command line: the full CLI parses them
    again and gives its one usage message."""


class _ServeParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print its own usage and exit 2
        raise _NotServe(message)


def _serve_parser() -> argparse.ArgumentParser:
    p = _ServeParser(prog="skillshelf", add_help=False, allow_abbrev=False)
    p.add_argument("--home")
    p.add_argument("--root", action="append", default=[])
    p.add_argument("--client-roots", dest="client_roots", action="store_true", default=None)
    p.add_argument("--no-client-roots", dest="client_roots", action="store_false")
    p.add_argument("command")
    p.add_argument("--http", action="store_true")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--write-policy", dest="write_policy")
    return p


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "serve" in argv and not any(a in ("-h", "--help") for a in argv):
        try:
            ns = _serve_parser().parse_args(argv)
        except _NotServe:
            ns = None
        if ns is not None and ns.command == "serve":
            _serve(ns)
            return
    from .cli import main as cli_main

    cli_main(argv)


def _serve(ns: argparse.Namespace) -> None:
    """Start the MCP server. Every problem found before it starts is one line on stderr:
    exit 2 for a bad argument, 1 for anything else (a port in use, an unusable home)."""
    import os

    from .errors import SkillshelfError

    try:
        from .config import ensure_home, load

        if ns.http:
            _check_port(ns.host, ns.port)
        cfg = load(ns.home or os.environ.get("SKILLSHELF_HOME"), roots=ns.root or None,
                   client_roots=ns.client_roots, write_policy=ns.write_policy)
        if ensure_home(cfg):   # a typo in SKILLSHELF_HOME must not look like an empty library
            print(f"skillshelf: note: there was no library at {cfg.home}; created a new, empty one"
                  " (check --home / SKILLSHELF_HOME if you meant another)", file=sys.stderr)
        for m in cfg.missing_roots():   # stderr: stdout is the protocol
            print(f"skillshelf: warning: {m.message}; left out — {m.fix}", file=sys.stderr)
        from .mcp_server import serve

        def factory():
            from .library import Library

            return Library(config=cfg, client="mcp")

        serve(factory, http=ns.http, host=ns.host, port=ns.port, token=cfg.http_token)
    except _BadArgument as exc:
        print(f"error: {exc} — see `skillshelf serve --help`", file=sys.stderr)
        sys.exit(2)
    except SkillshelfError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


class _BadArgument(Exception):
    """A serve argument that can never work (exit 2)."""


def _check_port(host: str, port: int) -> None:
    """Refuse, before anything else is said: a port outside 1-65535 (a usage error, exit 2),
    and a host and port this process cannot listen on (``ConfigError``). The server binds
    again itself before it prints its URL, so a port taken in between is one line too."""
    from .net import bind_socket

    if not 1 <= port <= 65535:
        raise _BadArgument(f"port {port} is out of range: use a port from 1 to 65535 (default 8765)")
    bind_socket(host, port, default_port=8765).close()


if __name__ == "__main__":
    main()
