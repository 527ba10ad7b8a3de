"""What every command module of the CLI shares: the two consoles (skill text printed safely),
the options given before the command, opening the library, JSON output, argument checks
that make a malformed argument a usage error (exit 2), and the one-line error messages."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional, Protocol

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from ..errors import ConfigError, NotFoundError, SkillshelfError
from ..version import __version__

# C0 controls except tab and newline, DEL, and C1 controls (ESC starts every terminal escape
# sequence; C1 CSI/OSC do the same on some terminals). Each is shown as a visible stand-in.
_CONTROL = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROL[0x7F] = "\u2421"
_CONTROL.update({c: "\ufffd" for c in range(0x80, 0xA0)})


def _clean(text: Any) -> str:
    """Text safe to print on a terminal: control characters (C0 but tab and newline, DEL, C1)
    become visible stand-ins (ESC -> ␛); CRLF line ends become LF. The consoles print with
    markup and emoji codes off, so "[/bold]" or ":x:" in a skill stay literal text."""
    s = "" if text is None else str(text)
    if "\r\n" in s:
        s = s.replace("\r\n", "\n")
    return s.translate(_CONTROL)


class _SafeConsole(Console):
    """Skill text comes from strangers: every string printed goes through ``_clean``, and Rich
    markup is off (a description holding "[/bold]" would otherwise crash the print). Our own
    styling is a ``Text`` built with ``_styled``."""

    def __init__(self, **kw: Any):
        super().__init__(highlight=False, markup=False, emoji=False, **kw)

    def print(self, *objects: Any, **kw: Any) -> None:
        super().print(*(_clean(o) if isinstance(o, str) else o for o in objects), **kw)


class _SafeTable(Table):
    def add_row(self, *cells: Any, **kw: Any) -> None:
        super().add_row(*(_clean(c) if isinstance(c, str) else c for c in cells), **kw)


def _table(*columns: str, **kw: Any) -> Table:
    return _SafeTable(*columns, box=None, **kw)


def _styled(*parts: str | tuple[str, str]) -> Text:
    """A line of plain strings and (text, style) pairs, every text cleaned."""
    return Text.assemble(*((_clean(p[0]), p[1]) if isinstance(p, tuple) else _clean(p) for p in parts))


def _write(text: str) -> None:
    """Raw text to stdout (reports, diffs), control characters made visible."""
    sys.stdout.write(_clean(text))


out = _SafeConsole(soft_wrap=True)
err = _SafeConsole(stderr=True, soft_wrap=True)   # a message is one line, however long
if not out.is_terminal and not os.environ.get("COLUMNS"):
    # piped or redirected: Rich would cut tables to 80 columns ("workspace:cors-…"); a pipe
    # gets whole ids and names instead
    out.width = 400


class State:
    """The options given before the command (``--home``, ``--root``, ``--client-roots``,
    ``--store``)."""

    home: Optional[Path] = None
    roots: list[Path] = []
    client_roots: Optional[bool] = None
    store: Optional[str] = None


state = State()


def _version_line() -> str:
    return f"skillshelf {__version__}"


def _config(**overrides: Any):
    from ..config import load

    overrides.setdefault("store", state.store)
    return load(state.home, roots=[str(r) for r in state.roots] or None, client_roots=state.client_roots,
                **overrides)


def _lib(*, warn_missing: bool = True, creates: bool = False, samples: bool | None = None, shown: bool = True):
    """Open the library for one command. A home without a library is created, and said so on
    stderr (unless the command is there to create one): a typo in --home would otherwise
    look like an empty library. Saved roots that have gone are named once, on stderr. On a
    terminal, the sync a command runs first (new or changed files) shows its progress there, as
    ``sync`` does (``shown``; a server keeps its own)."""
    from ..config import ensure_home
    from ..library import Library

    cfg = _config()
    note = ensure_home(cfg)
    note = "" if creates else note
    lib = Library.init(config=cfg, samples=samples) if samples is not None else Library(config=cfg)
    if note:   # said once the library exists (a home that cannot be written creates nothing)
        err.print(f"note: {note}")
    if warn_missing:
        for m in lib.missing_roots:
            err.print(f"warning: {m.message}; left out — {m.fix}")
    if shown and err.is_interactive:
        lib.indexer.shown = lambda: _shown(lib)
    return lib


@contextlib.contextmanager
def _shown(lib: Any) -> Iterator[tuple[Any, Any]]:
    """The progress display of a sync a command runs before it answers (nothing when nothing changed)."""
    from .progress import SyncProgress

    with SyncProgress(err, embedding=lib.config.embedder != "none") as prog:
        yield prog.on_files, prog.on_texts


def _json(data: Any) -> None:
    """JSON on stdout. JSON escapes C0 controls itself; C1 controls (which some terminals
    obey) are written as \\u escapes too, so the data is unchanged and safe to print."""
    _write_json_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _write_json_text(text: str) -> None:
    sys.stdout.write(_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text))


_C1 = re.compile("[\x7f-\x9f]")


# --- arguments: a malformed one is a usage error (exit 2) ------------------------------------

def _usage_error(ctx: typer.Context, message: str) -> Exception:
    """A usage error (exit 2) of the click copy typer runs on, for arguments that parse one by
    one but not together."""
    kind = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    return kind(message, ctx=ctx)


def _bad_option(ctx: typer.Context, option: str, exc: SkillshelfError) -> Exception:
    """The library refused an option's value as malformed (an unknown skill type): a usage
    error naming the option, with the library's own message and fix."""
    return typer.BadParameter(_cli_words(str(exc)), ctx=ctx, param_hint=f"'{option}'")


def _positive(what: str):
    def check(value: int) -> int:
        if value is not None and value < 1:
            raise typer.BadParameter(f"{value}: {what} must be positive")
        return value
    return check


def _in_range(low: int, high: int | None, what: str):
    """A number option's check: an out-of-range value names the range (exit 2)."""
    def check(value: Optional[int]) -> Optional[int]:
        if value is not None and (value < low or (high is not None and value > high)):
            use = f"use {low} to {high}" if high is not None else f"use {low} or more"
            raise typer.BadParameter(f"{value} is out of range for {what}: {use}")
        return value
    return check


def _choice(*choices: str):
    """A word option's check: anything but one of ``choices`` is a usage error naming them."""
    def check(value: Optional[str]) -> Optional[str]:
        if value is not None and value not in choices:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(choices)}")
        return value
    return check


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _date(value: Optional[str]) -> Optional[str]:
    """An option that takes a calendar date: refused at parse time unless YYYY-MM-DD and real."""
    import datetime as dt

    if value is None:
        return None
    try:
        if not _DATE.fullmatch(value.strip()):
            raise ValueError(value)
        dt.date.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date: use YYYY-MM-DD, e.g. 2026-01-31") from None
    return value.strip()


class _CountArguments(TyperCommand):
    """A command whose number arguments count something (days, versions): "-5" there is a
    wrong number, not an unknown option ("No such option: -5")."""

    what = "numbers"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for a in args:
            if a == "--":
                break
            if _NEGATIVE.fullmatch(a):
                raise _usage_error(ctx, f"{a} is negative: {self.what} must be positive")
        return super().parse_args(ctx, args)


_NEGATIVE = re.compile(r"-\d[\d_]*(\.\d*)?")


def _counts(what: str) -> type:
    return type("CountArguments", (_CountArguments,), {"what": what})


# --- errors: one line on stderr ---------------------------------------------------------------

def _cannot_write(exc: BaseException) -> str | None:
    """The one line for a write the disk or the lock refused; None for other errors."""
    from ..library import explain

    try:
        cfg = _config()
        home, db_path = _clean(str(cfg.home)), cfg.db_path
    except Exception:   # noqa: BLE001 -- the message must not fail on a bad config
        home, db_path = "the library folder", None
    refused = explain(exc, db_path=db_path, home=home)
    return None if refused is None else _clean(str(refused))


def _with_fix(exc: SkillshelfError) -> str:
    """The error's line, with the command-line way out: a skill name that matches nothing
    close gets where the names are (the library offers "did you mean" itself when a name is
    close, and a fix in its own words to the other adapters)."""
    if isinstance(exc, NotFoundError) and not exc.suggestions and exc.message.startswith("no skill named "):
        words = " ".join(re.findall(r"[^\W_]+", exc.message[len("no skill named "):]))[:80].strip()
        return (f"{exc.message} — see `skillshelf list` for the names, or search by what it does: "
                f"`skillshelf search \"{words or 'WHAT IT DOES'}\"`")
    return str(exc)


_GLOBAL_OPTIONS = ("--home", "--root", "--client-roots", "--no-client-roots", "--store")

# The library names its parameters as the Python and MCP APIs spell them; the command line
# spells them as options. Quoted values are left alone.
_OPTION_NAMES = {"skill_type": "--type", "current_repo": "--current-repo", "repo_scope": "--repo-scope",
                 "query_id": "--query-id", "include_inactive": "--include-inactive",
                 "include_expired": "--include-expired", "name_contains": "--name", "write_policy": "--write-policy"}
_OPTION_RE = re.compile(r"'[^']*'|\b(" + "|".join(_OPTION_NAMES) + r")\b")


def _cli_words(message: str) -> str:
    """A library message with API parameter names as CLI options, made safe to print."""
    return _clean(_OPTION_RE.sub(lambda m: _OPTION_NAMES[m.group(1)] if m.group(1) else m.group(0), message))


def _usage_fix(exc: Any, argv: list[str]) -> str:
    """The way out of a usage error: by default the command's help. A global option after the
    command: put it before. An unknown "option" that is a value starting with '-' (a skill
    named "-21risk-automation"): put `--` before it, as click reads every word after `--` as
    an argument."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "skillshelf"
    option = getattr(exc, "option_name", None) or ""
    if option in _GLOBAL_OPTIONS and where != "skillshelf":
        return (f"{option} is a global option: put it before the command (skillshelf {option} ... "
                f"{where.split(' ', 1)[-1]} ...)")
    word = _dashed_value(option, argv) if ctx is not None and _takes_arguments(ctx.command) else None
    if word is not None:
        return f"a name or value that starts with '-' goes after `--`: `{where} -- {word}`"
    return f"see `{where} --help`"


def _takes_arguments(command: Any) -> bool:
    return any(getattr(p, "param_type_name", "") == "argument" for p in getattr(command, "params", ()))


def _dashed_value(option: str, argv: list[str]) -> str | None:
    """The word of ``argv`` that click took for the unknown option ``option`` when it cannot be
    an option: one dash and more than one letter ("-21risk-automation" is read as "-2" then
    "1risk..."). None when the word looks like an option (a typo in "--limit", a lone "-x")."""
    if not option.startswith("-") or option.startswith("--") or len(option) != 2:
        return None
    for word in argv:
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--") and len(word) > 2 and option[1] in word[1:]:
            return word
    return None


class UsageProblem(Protocol):
    """What click's usage errors and typer's own have in common."""

    exit_code: int

    def format_message(self) -> str: ...


class ShowsHelp(Protocol):
    """Click's ``NoArgsIsHelpError``: showing it prints the help."""

    def show(self) -> None: ...


def _usage_errors() -> tuple[type[BaseException], ...]:
    """Click's usage error classes: typer >= 0.2x carries its own copy of click (its errors
    derive from ``typer.exceptions.TyperException``); older typer uses click itself."""
    kinds: list[type[BaseException]] = []
    try:
        from typer.exceptions import TyperException

        kinds.append(TyperException)
    except ImportError:
        pass
    try:
        import click

        kinds.append(click.ClickException)
    except ImportError:
        pass
    return tuple(kinds)


def store_url(url: Optional[str]) -> Optional[str]:
    """``--store``: a postgresql:// URL, or "" for the local library. Anything else is one line
    naming the flag (never the rest of the URL: it may hold a password)."""
    if url is None:
        return None
    url = url.strip()
    if url and not url.startswith(("postgresql://", "postgres://")):
        scheme = f" ({url.split('://', 1)[0][:20]!r})" if "://" in url else ""
        raise ConfigError(f"--store takes a PostgreSQL URL, not this one{scheme}",
                          fix="give --store postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or leave it out for the "
                              "local library in the home")
    return url
