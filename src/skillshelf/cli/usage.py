"""What agents reported and what the library learned: ``report-outcome``, ``stats``, ``report``,
``prune-usage`` and ``usage forget``."""

from __future__ import annotations

import json
from typing import Optional

import typer

from ..text import trim
from .common import _choice, _clean, _date, _json, _lib, _table, _usage_error, _write, err, out
from .evals import worse_line

commands = typer.Typer()


@commands.command("report-outcome")
def report_outcome(ctx: typer.Context, skill: str = typer.Argument(..., help="skill name or id"),
                   worked: bool = typer.Option(False, "--worked", help="the skill worked"),
                   failed: bool = typer.Option(False, "--failed", help="the skill did not work"),
                   note: str = typer.Option("", help="what happened"),
                   query_id: Optional[int] = typer.Option(None, help="the query_id a logged search printed "
                                                                   "(`search --log --json`)"))\
        -> None:
    """Record whether a skill worked (append-only): --worked or --failed."""
    if worked and failed:   # recording either would be a guess
        raise _usage_error(ctx, "--worked and --failed contradict each other: pass one of them")
    if not worked and not failed:
        raise _usage_error(ctx, "say how it went: pass --worked or --failed")
    lib = _lib()        # a person: a held skill's outcome is theirs to record
    res = lib.report_outcome(skill, worked, note=note, query_id=query_id, client="cli", reader=lib.PERSON)
    out.print(f"recorded: {res['skill']} {'worked' if worked else 'failed'} ({res['reports']} reports)")


@commands.command()
def stats(since: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                             help="only usage from this day on"),
          json_out: bool = typer.Option(False, "--json")) -> None:
    """Curation statistics: most used, low success, never surfaced, gaps."""
    lib = _lib()
    st = lib.stats(since=since, reader=lib.PERSON)       # the owner sees held skills too
    js = lib.judge_stats(since=since)
    worse = lib.evals.worse_versions()     # a current version that does worse than the one before it
    if json_out:
        _json(st.as_dict() | {"judge": js, "worse_versions": worse})
        return
    out.print(f"{st.queries} queries ({st.finds} finds), {st.reports} reports, report rate {st.report_rate:.0%}, "
              f"confident {st.confident_rate:.0%}")
    out.print(_judge_line(js))
    t = _table("most used", "reports", "success", "times shown", "last used", title="most used (by reported uses)")
    for u in st.most_used[:15]:
        t.add_row(u.name, str(u.reports), "-" if u.success_rate is None else f"{u.success_rate:.0%}",
                  str(u.times_shown), u.last_used or "-")
    _table_or_none(t, "most used: none yet (no outcome reported)")
    t = _table("skill", "worked", "reports", "rate", title="low success (rewrite candidates)")
    for u in st.low_success[:15]:
        t.add_row(u.name, str(u.worked), str(u.reports), f"{(u.success_rate or 0):.0%}")
    _table_or_none(t, "low success (rewrite candidates): none")
    t = _table("request", "times", "last seen", title="gaps (no confident match)")
    for g in st.gaps[:15]:
        t.add_row(trim(g.query, 100), str(g.count), g.last_seen[:10])     # a 2,000-character request: its start
    _table_or_none(t, "gaps (no confident match): none")
    for w in worse:
        out.print(f"worse version: {worse_line(w)}")
    out.print(f"never surfaced (kill candidates): {len(st.never_surfaced)} skills"
              + (": " + ", ".join(x['name'] for x in st.never_surfaced[:10]) if st.never_surfaced else ""))


def _table_or_none(t, empty: str) -> None:
    """A table, or one line saying it is empty (a header with no rows reads as a broken table)."""
    out.print(t if t.row_count else empty)


def _judge_line(js: dict) -> str:
    """The judge's line in ``stats``: how many searches it judged and how that went."""
    if not js["judged"]:
        return "judge: " + ("configured (" + js["backend"] + "), no judged searches yet" if js["configured"]
                            else "off (no judge.backend configured)")
    models = ", ".join(f"{m} ×{n}" for m, n in js["models"].items())
    line = (f"judge: {js['judged']} judged searches ({models}): {js['ok']} answered, {js['timeouts']} timed out, "
            f"{js['errors']} failed")
    if js["p50_ms"] is not None:
        line += f"; latency p50 {js['p50_ms'] / 1000:.1f}s, p95 {js['p95_ms'] / 1000:.1f}s"
    if js["invented_dropped"]:
        line += f"; {js['invented_dropped']} invented names dropped"
    if js["likely"] or js["weak"]:
        line += f"; soft filter: {js['likely']} likely, {js['weak']} weak"
    return line


@commands.command()
def report(since: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                              help="only usage from this day on"),
           fmt: str = typer.Option("md", "--format", callback=_choice("md", "json"), help="md | json")) -> None:
    """A usage report: what worked, the rewrite list, the kill list, the gaps."""
    lib = _lib()
    text = lib.usage_report(since=since, fmt=fmt, reader=lib.PERSON)
    worse = lib.evals.worse_versions()      # versions that did worse than the one before them
    if fmt == "json":
        _json(json.loads(text) | {"worse_versions": worse})
        return
    _write(text + "\n## Worse versions (roll back)\n" + "".join(f"- {worse_line(w)}\n" for w in worse)
           + ("" if worse else "- none\n"))


@commands.command("prune-usage")
def prune_usage(before: str = typer.Option(..., callback=_date, metavar="YYYY-MM-DD",
                                           help="delete usage rows older than this day"),
                yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete old usage rows (the only way usage rows are ever deleted)."""
    if not yes and not typer.confirm(f"Delete all usage rows before {_clean(before)}?"):
        err.print("nothing deleted")
        raise typer.Exit(1)
    n = _lib().prune_usage(before)
    out.print(f"deleted {n} rows")


usage_app = typer.Typer(help="What ranking learned from outcome reports.", no_args_is_help=True)


@usage_app.command("forget")
def usage_forget(skill: Optional[str] = typer.Argument(None, help="forget what was learned about this skill"),
                 client: Optional[str] = typer.Option(None, help="only what this client reported"),
                 before: Optional[str] = typer.Option(None, callback=_date, metavar="YYYY-MM-DD",
                                                      help="only reports before this day"),
                 everything: bool = typer.Option(False, "--all", help="forget everything learned")) -> None:
    """Undo learning from outcomes (the usage log itself is kept: `prune-usage` deletes that)."""
    n = _lib().forget_learning(skill=skill, client=client, before=before, everything=everything)
    out.print(f"forgot {n} learned report{'s' * (n != 1)}")
