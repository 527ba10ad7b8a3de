"""The command line: a thin layer that builds a ``Library``, calls one method and prints.

Domain errors become one line on stderr (problem — fix) and exit code 1; a usage error
(unknown option, missing or malformed argument) exits 2. The commands live in one module per
group (:mod:`.skills`, :mod:`.curate`, :mod:`.usage`, ...); what they share is in
:mod:`.common`. This module puts them together in the order ``--help`` lists them."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any, Optional, cast

import typer

from ..errors import SkillshelfError
from . import curate, evals, install, io, onboarding, servers, skills, sources, team, trust, usage
from .common import (
    ShowsHelp,
    UsageProblem,
    _cannot_write,
    _clean,
    _cli_words,
    _usage_errors,
    _usage_fix,
    _version_line,
    _with_fix,
    err,
    out,
    state,
    store_url,
)
from .roots import roots_app

__all__ = ["app", "main", "run"]

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="skillshelf: a local-first librarian for agent skills.")

# the order of `skillshelf --help`
ORDER = ("init", "sync", "list", "show", "search", "validate", "doctor", "rebuild", "config", "version", "demo",
         "report-outcome", "stats", "report", "prune-usage", "serve", "history", "diff", "rollback", "extend-ttl",
         "deprecate", "restore", "delete", "dashboard", "install", "uninstall", "export", "import", "pick",
         "migrate-store", "audit", "trust", "pin", "unpin", "add", "lock", "eval")


def _name(info: Any) -> str:
    return info.name or info.callback.__name__.lower().replace("_", "-")


app.registered_commands.extend(sorted(
    (info for group in (onboarding, skills, curate, usage, evals, io, install, servers, team, trust, sources)
     for info in group.commands.registered_commands),
    key=lambda info: ORDER.index(_name(info))))
app.add_typer(roots_app, name="roots")
app.add_typer(sources.sources_app, name="sources")
app.add_typer(curate.review_app, name="review")
app.add_typer(usage.usage_app, name="usage")
app.add_typer(team.tokens_app, name="tokens")


def _print_version(value: bool) -> None:
    """``skillshelf --version``: the same line as ``skillshelf version``."""
    if value:
        out.print(_version_line())
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    # SKILLSHELF_HOME is read by the configuration itself, so `skillshelf config` can say
    # whether the home came from the flag or the environment
    home: Optional[Path] = typer.Option(None, "--home", metavar="PATH",
                                        help="library home (workspace + database); default: SKILLSHELF_HOME,"
                                             " else the platform data dir"),
    root: list[Path] = typer.Option([], "--root", metavar="PATH",
                                    help="extra read-only skill root for this command (repeatable; "
                                         "`skillshelf roots add` saves one)"),
    client_roots: Optional[bool] = typer.Option(None, "--client-roots/--no-client-roots",
                                                help="also scan ~/.claude/skills, .agents/skills and friends"),
    store: Optional[str] = typer.Option(None, "--store", metavar="URL",
                                        help="a team store, postgresql://USER:PASSWORD@HOST/DB (overrides "
                                             "SKILLSHELF_STORE and config.toml); default: the local library"),
    _version: bool = typer.Option(False, "--version", is_eager=True, expose_value=False, callback=_print_version,
                                  help="print the version and exit (as `skillshelf version`)"),
) -> None:
    state.home = home
    state.roots = list(root)
    state.client_roots = client_roots
    state.store = store_url(store)


def main(argv: list[str] | None = None) -> None:
    """The console script's entry: run the command and exit with its code (0 ok, 1 error,
    2 usage error). ``standalone_mode=False`` lets this function print domain errors as one
    line; click then *returns* the code of a ``typer.Exit`` instead of exiting, so it is
    passed on here (ignoring it made every failure exit 0)."""
    sys.exit(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run one command line and return its exit code (errors are printed, never raised)."""
    # bytes in an argument that are not UTF-8 arrive as lone surrogates, which nothing can
    # store or print: they become U+FFFD, so a request with a stray byte is still a request
    argv = [a.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            for a in (sys.argv[1:] if argv is None else argv)]
    try:
        rv = app(args=argv, prog_name="skillshelf", standalone_mode=False)
    except SkillshelfError as exc:
        err.print(f"error: {_cli_words(_with_fix(exc))}")
        return 1
    except sqlite3.DatabaseError as exc:   # a damaged index read through a path the store did not wrap,
        refused = _cannot_write(exc)         # a full disk, a read-only file system
        if refused is None:
            raise
        err.print(f"error: {refused}")
        return 1
    except OSError as exc:         # a file write refused by the disk, or a file that cannot be read
        where = f" ({_clean(str(exc.filename))})" if exc.filename else ""
        refused = _cannot_write(exc)
        err.print(f"error: {refused}" if refused is not None else
                  f"error: {exc.strerror or exc}{where} — check that file or folder, then try again")
        return 1
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        err.print("aborted")
        return 1
    except _usage_errors() as exc:   # unknown option, missing argument, bad value
        usage = cast(UsageProblem, exc)
        if type(exc).__name__ == "NoArgsIsHelpError":   # `skillshelf` alone: the help
            cast(ShowsHelp, exc).show()
        else:
            err.print(f"error: {_clean(usage.format_message())} — {_usage_fix(exc, argv)}")
        return usage.exit_code
    # a command returns None; click returns the code of a typer.Exit (or Ctrl-C's 130)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":
    main()
