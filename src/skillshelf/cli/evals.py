"""``skillshelf eval``: each skill's trigger evals run through the search agents use."""

from __future__ import annotations

from collections import Counter

import typer

from .common import _clean, _in_range, _json, _lib, _usage_error, err, out

commands = typer.Typer()


def version_cell(v: dict) -> str:
    """``v2 7/9 worked (78%, 45–94%)``: a version's outcomes and their 95% Wilson interval."""
    return (f"v{v['version']} {v['worked']}/{v['reports']} worked ({v['rate']:.0%}, "
            f"{v['low'] * 100:.0f}–{v['high']:.0%})")


def worse_line(w: dict) -> str:
    return (f"v{w['version']} of {w['name']} worked {w['rate']:.0%} of {w['reports']} reports, against "
            f"{w['previous_rate']:.0%} of {w['previous_reports']} for v{w['previous']}: `{w['rollback']}`")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


@commands.command("eval")
def eval_(ctx: typer.Context,
          names: list[str] = typer.Argument(None, help="skill names or ids (or --all)"),
          everything: bool = typer.Option(False, "--all", help="every skill that has evals (its own eval files,"
                                                                " or requests reported as worked for it)"),
          k: int = typer.Option(5, "--k", callback=_in_range(1, 50, "--k"),
                                help="a should-trigger query passes when the skill is in the top k"),
          json_out: bool = typer.Option(False, "--json", help="a list: per skill name, recall, false_rate, "
                                                              "source, misses"),
          init: bool = typer.Option(False, "--init", help="write NAME's evals/eval_queries.json from the usage "
                                                          "log (requests that worked for it, near misses)")) -> None:
    """Run skills' trigger evals (evals/eval_queries.json, the Agent Skills guide's format) through
    the search agents use, without logging them: recall@k of the should-trigger queries, false
    triggers of the should-not ones, and what came first on each miss. Skills with no eval file are
    run on the requests reported as worked for them (learned evals). Exits 1 when a skill is below
    eval.min_recall or above eval.max_false, or when no skill had evals to run."""
    if not names and not everything:
        raise _usage_error(ctx, "name the skills to evaluate, or pass --all")
    if init:
        if everything or len(names) != 1:
            raise _usage_error(ctx, "--init writes one skill's eval file: name one skill")
        res = _lib().evals.init(names[0])
        out.print(f"wrote {res['path']}: {res['should_trigger']} requests it served, {res['should_not']} near misses "
                  "(requests it was shown for that another skill served); edit it, then run "
                  f"`skillshelf eval {res['name']}`")
        return
    run = _lib().evals.run(names or [], everything=everything, k=k)
    if json_out:
        _json(run.as_list())
    else:
        _print(run)
    if not run.passed:
        raise typer.Exit(1)
    if not run.evaluated:
        # a gate on skills that have no evals passes nothing, named or --all: it says so and fails
        which = (f"none of the {len(run.results) + run.without_evals:,} skills has evals" if everything
                 else "no named skill has evals")
        err.print(f"error: nothing was evaluated: {which}; write evals/eval_queries.json in a skill's "
                  "folder, or `skillshelf eval NAME --init` writes one from the usage log")
        raise typer.Exit(1)


def _print(run) -> None:
    names = Counter(r.name for r in run.results)
    for r in run.results:
        name = r.name if names[r.name] == 1 else f"{r.name} [{r.id}]"    # several skills of one name: which
        if r.source == "none":
            out.print(f"{name}: no evals (no evals/eval_queries.json, and no request reported as worked for it)")
            continue
        verdict = "ok" if r.passed else "FAIL"
        line = f"{verdict}  {name} ({r.source}): recall@{r.k} {r.found}/{r.positives} ({_pct(r.recall)})"
        if r.negatives:
            line += f", false triggers {len(r.false_triggers)}/{r.negatives} ({_pct(r.false_rate)})"
        for split, part in sorted(r.splits.items()):
            line += f", {split} {part['found']}/{part['of']}"
        out.print(line)
        for f in r.findings:
            out.print(f"    {f['severity']}: {f['message']}" + (f" (line {f['line']})" if f.get("line") else ""))
        for m in r.misses:
            where = f"#{m.rank}" if m.rank else (f"its near-duplicate {m.stood_in} listed in its place"
                                                 if m.stood_in else "not in the top 10")
            out.print(f"    missed ({where}): {_clean(m.query)[:100]!r} — first: {', '.join(m.first) or 'nothing'}")
        for m in r.false_triggers:
            out.print(f"    false trigger (#{m.rank}): {_clean(m.query)[:100]!r}")
    for c in run.collisions:
        out.print(f"collision: {c['skills'][0]} and {c['skills'][1]} take each other's requests "
                  f"({c['queries']} queries): merge them, or sharpen their descriptions")
    if run.without_evals:
        out.print(f"{run.without_evals} skills have no evals (`skillshelf eval NAME` on one says so)")
    none = sum(r.source == "none" for r in run.results)
    failed = sum(not r.passed for r in run.results)
    out.print(f"{len(run.results) - failed - none} passed, {failed} failed"
              + (f", {none} without evals" if none else "")
              + f" (floors: recall {run.min_recall:.0%}, false triggers {run.max_false:.0%})")
