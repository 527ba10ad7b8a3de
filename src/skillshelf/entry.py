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
    p.add_argument("--write-policy", dest="write_policy", choices=("read-only", "propose", "open"))
    p.add_argument("--store")          # before or after `serve`: a team store's URL
    return p


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "serve" in argv and not any(a in ("-h", "--help") for a in argv):
        try:
            ns = _serve_parser().parse_args(argv)
        except _NotServe:
            ns = None
        if ns is not None and ns.command == "serve":
            from .mcp.launch import serve

            serve(ns)
            return
    from .cli import main as cli_main

    cli_main(argv)


if __name__ == "__main__":
    main()
