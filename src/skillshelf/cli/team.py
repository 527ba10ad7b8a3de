"""Team mode: ``tokens add|list|revoke`` (a token per person or agent, with a role) and
``migrate-store`` (copy a local library into a team store, or bring its schema up to date).

Both need a team store: ``--store URL`` before the command (or SKILLSHELF_STORE, or ``store``
in config.toml); ``migrate-store`` also takes it as ``--to URL``."""

from __future__ import annotations

from typing import Optional

import typer

from ..errors import ConfigError
from .common import _choice, _config, _json, _table, _usage_error, _write, err, out, state

ROLES = ("reader", "agent", "curator", "admin")
_TEAM_URL = ("postgresql://", "postgres://")

commands = typer.Typer()
tokens_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                         help="Tokens of a team store: one per person or agent, each with a role "
                              "(reader, agent, curator, admin)")


def _team_tokens():
    """The tokens of the configured team store (they live there, not in a home): no library is
    opened, so no home is made and no skill is copied."""
    from ..library import Library

    cfg = _config()
    if not cfg.store:
        raise ConfigError("tokens belong to a team store; this library is local",
                          fix="pass --store postgresql://USER:PASSWORD@HOST/DB before the command (or set "
                              "SKILLSHELF_STORE) to manage a team's tokens")
    return Library.store_tokens(cfg.store)


# --- tokens ----------------------------------------------------------------------------------

@tokens_app.command("add")
def tokens_add(name: str = typer.Argument(..., help="who the token is for: a person or an agent (e.g. ci-agent)"),
               role: str = typer.Option(..., "--role", callback=_choice(*ROLES),
                                        help="reader | agent | curator | admin")) -> None:
    """Make a token for NAME with a role. It is printed once, alone on the last line: the team
    store keeps only its hash."""
    with _team_tokens() as tokens:
        token = tokens.add(name, role)
    article = "an" if role[:1] in "aeiou" else "a"         # an admin token, an agent token, a reader token
    out.print(f"made {article} {role} token for {name}; it is shown only now (the team store keeps its hash), "
              "so store it where its user keeps secrets:")
    _write(token + "\n")


@tokens_app.command("list")
def tokens_list(json_out: bool = typer.Option(False, "--json", help="as JSON")) -> None:
    """The tokens: names, roles, when each was made and last used (never a token)."""
    with _team_tokens() as tokens:
        rows = tokens.list()
    if json_out:
        _json(rows)
        return
    if not rows:
        out.print("no tokens yet: make one with `skillshelf --store URL tokens add NAME --role "
                  "reader|agent|curator|admin`")
        return
    t = _table("name", "role", "created", "last used")
    for r in rows:
        t.add_row(r["name"], r["role"], r["created"] or "-", r["last_used"] or "never")
    out.print(t)


@tokens_app.command("revoke")
def tokens_revoke(name: str = typer.Argument(..., help="the name the token was made for")) -> None:
    """Revoke NAME's token: every server refuses it from the next request on."""
    with _team_tokens() as tokens:
        tokens.revoke(name)
    out.print(f"revoked the token of {name}: requests with it are refused from now on")


# --- migrate-store ---------------------------------------------------------------------------

def _target(ctx: typer.Context, to: Optional[str]) -> str:
    """The team store to copy into or upgrade: ``--to``, else ``--store``, else the configured one."""
    if to is not None:
        to = to.strip()
        if not to.startswith(_TEAM_URL):
            scheme = f" ({to.split('://', 1)[0][:20]!r})" if "://" in to else ""
            raise _usage_error(ctx, f"--to takes a PostgreSQL URL, not this one{scheme}: give "
                                    "--to postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
        if state.store and state.store != to:
            raise _usage_error(ctx, "--store and --to name two different team stores: give the one to copy into, "
                                    "with --to")
        return to
    url = state.store if state.store is not None else _config().store
    if not url:
        raise _usage_error(ctx, "say which team store: --to postgresql://USER:PASSWORD@HOST/DB (or --store URL "
                                "before the command)")
    return url


@commands.command("migrate-store")
def migrate_store(ctx: typer.Context,
                  to: Optional[str] = typer.Option(None, "--to", metavar="URL",
                                                   help="the team store, postgresql://USER:PASSWORD@HOST/DB"),
                  dry_run: bool = typer.Option(False, "--dry-run", help="say what would be copied; write nothing"),
                  upgrade: bool = typer.Option(False, "--upgrade",
                                               help="only apply the team store's pending schema migrations"),
                  json_out: bool = typer.Option(False, "--json", help="the report as JSON")) -> None:
    """Copy the local library (--home) into a team store: workspace skills with every version
    and changelog entry, drafts, overlays, pinned roots, trusts, sources, usage logs, learning
    memory, the judge log. Only what the team store lacks is copied: running it again copies
    nothing twice."""
    from ..library import Library

    if upgrade and dry_run:
        raise _usage_error(ctx, "--upgrade applies the migrations and --dry-run writes nothing: pass one "
                                "(`skillshelf --store URL doctor` shows the store's schema)")
    url = _target(ctx, to)
    if upgrade:
        res = Library.upgrade_store(url)
        if json_out:
            _json(res)
        elif res["applied"]:
            out.print(f"applied to the team store {res['target']}: {', '.join(res['applied'])} "
                      f"(schema now {res['schema']})")
        else:
            out.print(f"the team store {res['target']} is up to date (schema {res['schema']}): nothing to apply")
        return
    cfg = _config(store="")            # the source: always the local library of the home
    if not cfg.db_path.exists():
        raise ConfigError(f"there is no library at {cfg.home} to copy",
                          fix="pass --home with the folder of the library to copy (before the command)")
    say = (lambda kind: err.print(f"copying {kind}…")) if err.is_terminal and not json_out else None
    with Library(config=cfg) as lib:
        report = lib.migrate_store(url, dry_run=dry_run, on_kind=say)
    if json_out:
        _json(report.as_dict())
    else:
        _print_report(report)
    if report.left_out:
        err.print(f"error: {len(report.left_out)} left out of the copy (listed above) — deal with each, then run "
                  "migrate-store again: what was copied stays, and nothing is copied twice")
        raise typer.Exit(1)


def _print_report(report) -> None:
    if report.dry_run:
        out.print(f"would copy the library at {report.source} into the team store {report.target} "
                  "(a dry run: nothing was written):")
        if report.pending:
            out.print(f"  first, the team store's schema would be brought up to date: {', '.join(report.pending)}")
    else:
        out.print(f"copied the library at {report.source} into the team store {report.target} "
                  f"in {report.seconds:.1f} s:")
        if report.applied:
            out.print(f"  the team store's schema was brought up to date: {', '.join(report.applied)}")
    t = _table("", "would copy" if report.dry_run else "copied", "there already")
    for kind, n in report.copied.items():
        t.add_row(kind, str(n), str(report.already[kind]))
    out.print(t)
    if report.left_out:
        out.print(f"left out ({len(report.left_out)}):")
        for item in report.left_out:
            out.print(f"  {item['kind']} {item['name']}: {item['why']}")
    for note in report.notes:
        out.print(f"note: {note}")
    if not report.dry_run and not report.left_out:
        out.print("next: start servers on it (`skillshelf --store URL serve --http`) and make tokens "
                  "(`skillshelf --store URL tokens add NAME --role ROLE`)")
