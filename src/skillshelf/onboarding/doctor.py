"""``doctor``: what a person checks when something seems wrong — the home and its settings, the
index database, the roots and how their changes are seen, the index against the files,
invalid files, name clashes, the embedding model and the judge. One ``Check`` per line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..catalog.eval_files import EVALS_DIR, read_evals
from ..checks import Check, DoctorReport
from ..search.sync import scan

EVAL_EXAMPLES = 3       # malformed eval files named on doctor's line; `skillshelf validate PATH` lists every one


def report(*, config: Any, store: Any, roots_: list, missing_roots: list, indexed_ids: Callable[[], set],
           invalid_files: Callable[[], list], clashes: Callable[[], list], embedder_status: Callable[[], dict],
           judge_check: Callable[[], Check], root_events: Callable[[], list[dict]] | None = None,
           extra: list[Check] | None = None) -> DoctorReport:
    """The doctor's report from the library's parts (each a value or a callable)."""
    checks: list[Check] = []
    cfg = config
    checks.append(Check("home", "ok", str(cfg.home)))
    checks.append(Check("config", "ok", str(cfg.config_path) if cfg.config_path.exists()
                        else f"{cfg.config_path} (absent: defaults in use)"))
    integrity = store.quick_check()
    unwritable = store.cannot_write() if integrity == "ok" else None
    if unwritable:
        checks.append(Check("database", "warn", f"{cfg.db_path} is read-only here ({unwritable}):"
                            " searches and reads work; saves, reports and re-indexing fail until the disk has"
                            " room or the folder is writable"))
    elif integrity == "ok":
        checks.append(Check("database", "ok",
                            f"{cfg.db_path}; migrations: {', '.join(store.applied_migrations())}"))
    else:
        checks.append(Check("database", "fail", f"{cfg.db_path} is damaged ({integrity[:200]}): run "
                            "`skillshelf rebuild` to move it aside and re-index the files"))
    checks.append(Check("write policy", "ok", cfg.write_policy))
    for m in missing_roots:
        # its skills have left the index: the owner has to restore the folder or forget it
        checks.append(Check("missing root", "fail", f"{m.message}: its skills are not indexed; {m.fix}"))
    found, notes = scan(roots_, (config.home,))
    roots = []
    for r in roots_:
        n = sum(1 for f in found if f.root.label == r.label)
        roots.append({"label": r.label, "path": str(r.path), "kind": r.kind, "writable": r.writable,
                      "exists": r.path.is_dir(), "skill_files": n})
    for m in missing_roots:
        roots.append({"label": "-", "path": str(m.path), "kind": "missing", "writable": False,
                      "exists": False, "skill_files": 0})
    indexed = indexed_ids()
    invalid = invalid_files()
    on_disk = {f.id for f in found}
    invalid_paths = {i["path"] for i in invalid}
    stale_missing = len([f for f in found if f.id not in indexed and str(f.path) not in invalid_paths])
    stale_extra = len(indexed - on_disk)
    if stale_missing or stale_extra:
        checks.append(Check("index vs files", "warn",
                            f"{stale_missing} files not indexed, {stale_extra} rows without a file: run `skillshelf sync`"))
    else:
        # the files not indexed are the invalid ones, listed by the next check
        n, m = len(indexed), len(found)
        line = f"{n} skill{'s' * (n != 1)} indexed from {m} file{'s' * (m != 1)}"
        if m > n:
            line += f" ({m - n} invalid: see below)" if invalid else f" ({m - n} not indexed)"
        checks.append(Check("index vs files", "ok", line))
    checks.append(Check("invalid files", "warn" if invalid else "ok",
                        f"{len(invalid)} SKILL.md files could not be parsed" if invalid else "none"))
    checks.append(eval_files_check(f.path.parent for f in found))
    for note in notes:
        checks.append(Check("scan", "warn", note))
    found_clashes = clashes()
    checks.append(Check("name clashes", "warn" if found_clashes else "ok",
                        f"{len(found_clashes)} names are used by more than one skill; lookups by name take the"
                        " winner by precedence" if found_clashes else "none"))
    emb = embedder_status()
    if not emb["ok"]:
        checks.append(Check("embedder", "warn", emb["degraded"]))
    elif emb["vectors"] < emb["skills"]:
        checks.append(Check("embedder", "warn", f"{emb['model_id']}: {emb['vectors']}/{emb['skills']} skills "
                            "embedded: run `skillshelf sync`"))
    else:
        checks.append(Check("embedder", "ok", f"{emb['model_id']} ({emb['dimensions']} dims), "
                            f"{emb['vectors']} skills embedded, {emb['body_vectors']} body vectors"
                            f" ({emb['body_vector_tokens']} tokens)"))
    if root_events is not None:
        for r in root_events():
            if r.get("note"):
                checks.append(Check("file events", "warn", r["note"]))
    checks.extend([*(extra or []), *set_aside_checks(cfg)])
    checks.append(judge_check())
    return DoctorReport(checks, roots, invalid, found_clashes, emb)


def eval_files_check(folders: Any) -> Check:
    """The skills whose trigger eval files (``evals/*.json``) are malformed, named with the file,
    the line and the reason ``skillshelf eval`` and ``skillshelf validate`` give: such a skill's
    evals fail until the file is fixed. Only folders that keep an ``evals`` folder are read."""
    bad: list[str] = []
    for folder in folders:
        if not (folder / EVALS_DIR).is_dir():
            continue
        findings = [f for f in read_evals(folder).findings if f.severity in ("fatal", "error")]
        if findings:
            f = findings[0]
            bad.append(f"{folder / f.message.split(': ', 1)[0]}{':' + str(f.line) if f.line else ''}: "
                       f"{f.message.split(': ', 1)[-1]}")
    if not bad:
        return Check("eval files", "ok", "none malformed")
    n = len(bad)
    return Check("eval files", "warn", f"{n} skill{'s' * (n != 1)} with a malformed eval file (its evals fail "
                 f"until it is fixed): " + "; ".join(bad[:EVAL_EXAMPLES])
                 + (f"; … and {n - EVAL_EXAMPLES} more" if n > EVAL_EXAMPLES else ""))


def store_check(st: dict[str, Any], team: dict[str, Any] | None = None) -> Check:
    """The store line: local or team, where, its schema; a team store's latency and whether
    this server follows its changes (``team``: ``Team.status()``)."""
    line = f"{st['kind']}: {st['where']}; schema {st['schema']}"
    if st["kind"] == "team":
        line += f"; answered in {st['latency_ms']} ms" if st["reachable"] else f"; unreachable ({st['error']})"
    following = team is None or bool(team["following"])
    if team is not None:
        line += (f"; following its changes (last {team['last_change']}, read {team['seconds_since_read']} s ago)"
                 if following else "; NOT following its changes: other servers' saves are not seen")
        if team.get("resyncs"):     # it was behind the pruned part of the stream (down over a week)
            line += f"; read the whole store again {team['resyncs']} time(s) after falling behind its changes"
        if team.get("behind") is not None:      # how far behind the store this server is
            line += "; up to date with the store" if not team["behind"] else \
                f"; {team['behind']} change(s) behind the store"
        if team.get("catching_up") is not None:
            line += (f"; catching up: its copy is being indexed ({team['catching_up']} skill(s) changed while it was "
                     "away); reads wait for it")
        for kept in team.get("set_aside") or []:    # a person's edit the store had moved past: kept, never dropped
            line += (f"; an edit of {kept['name']} on this server's disk was kept in {kept['kept']} (the store had "
                     f"moved on to {kept['store']})" + (", and waits in the review queue (`skillshelf review show "
                                                        f"{kept['name']}`)" if kept["draft"] else ""))
    ok = st["reachable"] and following and not (team or {}).get("set_aside")
    return Check("store", "ok" if ok else "warn" if st["reachable"] and following else "fail", line)


SET_ASIDE_EXAMPLES = 5


def set_aside_checks(config: Any) -> list[Check]:
    """What a team server moved out of its copy of the team workspace (``<home>/team/set-aside``:
    folders the store did not have, edits it had moved past), kept there, never deleted:
    one line naming the folder and a few of what it holds; none for a local library."""
    if not config.store:
        return []
    folder = config.workspace.parent / "set-aside"
    try:
        kept = sorted(f"{stamp.name}/{entry.name}" for stamp in folder.iterdir() if stamp.is_dir()
                      for entry in stamp.iterdir())
    except OSError:     # none yet
        return []
    if not kept:
        return []
    n = len(kept)
    return [Check("set aside", "warn", f"{n} folder{'s' * (n != 1)} or file{'s' * (n != 1)} moved out of this "
                  f"server's copy of the team workspace are kept in {folder} (look, then delete what you do not "
                  f"need): " + ", ".join(kept[:SET_ASIDE_EXAMPLES])
                  + (f", … and {n - SET_ASIDE_EXAMPLES} more" if n > SET_ASIDE_EXAMPLES else ""))]


def without_store(config: Any, error: Any) -> DoctorReport:
    """doctor's report when the team store does not open (PostgreSQL down, a wrong URL): the
    checks that need no store, and the store's line failed with ``error``'s message and fix."""
    checks = [Check("home", "ok", str(config.home)),
              Check("config", "ok", str(config.config_path) if config.config_path.exists()
                    else f"{config.config_path} (absent: defaults in use)"),
              Check("write policy", "ok", config.write_policy)]
    missing = config.missing_roots()
    checks += [Check("missing root", "fail", f"{m.message}: its skills are not indexed; {m.fix}") for m in missing]
    gone = {m.path for m in missing}
    roots = [{"label": Path(p).name, "path": str(p), "kind": "root", "writable": False, "exists": True,
              "skill_files": 0} for p in config.roots if p not in gone]
    checks.append(Check("database", "ok" if config.db_path.exists() else "warn",
                        f"{config.db_path} (not opened: a team server's index is read with its store)"))
    checks.append(Check("store", "fail", f"team: {getattr(error, 'message', error)}; "
                        f"{getattr(error, 'fix', '') or 'check the store URL'}"))
    checks += set_aside_checks(config)
    return DoctorReport(checks, roots, [], [], {"ok": False, "degraded": "not checked: the team store did not open"})
