"""Evidence for a skill: its trigger evals run through the search agents use.

A skill helps only when an agent finds it for the requests it is meant for. Each query of a
skill's evals (``catalog.eval_files``: the Agent Skills guide's ``evals/eval_queries.json``) goes
through the same search the MCP server answers, without being logged. A should-trigger query
passes when the skill, or a copy of it, is in the top k; a should-not query fails when it is.
A skill that keeps no eval file is judged on its learned evals instead: the requests an outcome
reported as worked for it. The two are reported apart, never mixed.

A change is judged the same way before it lands (``judge_change``): the evals run on a copy of
the index holding the changed text in place of the old one (``search.trial``); the real index
is not written.

May use: ``store`` and the core values; the search, the records and the trial index come in as
callables from the facade."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConflictError, NotFoundError, PolicyError, ValidationError
from ..files import atomic_write, contained
from ..text import name_key
from ..store.evidence import evidence_store

LEARNED_MAX = 50        # learned evals per skill: the newest requests reported as worked
FIRST_SHOWN = 3         # for a miss, how many of the skills that came first are named


@dataclass
class Miss:
    query: str
    split: str
    first: list[str]            # the names of the skills that came first (up to FIRST_SHOWN)
    rank: int | None = None     # where the skill came, when it came past k (None: not in the list)

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "split": self.split, "first": self.first, "rank": self.rank}


@dataclass
class SkillEval:
    """One skill's evals, run: ``source`` is authored (its eval files), learned (requests
    reported as worked for it) or none."""

    name: str
    id: str
    source: str
    k: int
    positives: int = 0
    found: int = 0
    negatives: int = 0
    false_triggers: list[Miss] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)    # problems with its eval files
    splits: dict[str, dict[str, int]] = field(default_factory=dict)   # train / validation: found of positives
    passed: bool = True

    @property
    def recall(self) -> float | None:
        return self.found / self.positives if self.positives else None

    @property
    def false_rate(self) -> float | None:
        return len(self.false_triggers) / self.negatives if self.negatives else None

    def judge(self, min_recall: float, max_false: float) -> None:
        bad_file = any(f["severity"] in ("fatal", "error") for f in self.findings)
        self.passed = not bad_file and (self.recall is None or self.recall >= min_recall) \
            and (self.false_rate is None or self.false_rate <= max_false)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "id": self.id, "source": self.source, "k": self.k,
                "recall": None if self.recall is None else round(self.recall, 4), "positives": self.positives,
                "found": self.found, "false_rate": None if self.false_rate is None else round(self.false_rate, 4),
                "negatives": self.negatives, "passed": self.passed,
                "misses": [m.as_dict() for m in self.misses],
                "false_triggers": [m.as_dict() for m in self.false_triggers],
                "splits": self.splits, "findings": self.findings}


@dataclass
class EvalRun:
    """What ``skillshelf eval`` reports: one ``SkillEval`` per skill, the floors they were held
    to, the skills left out for having no evals (``--all``), and collisions: pairs of skills
    that take each other's should-trigger queries."""

    k: int
    min_recall: float
    max_false: float
    results: list[SkillEval]
    without_evals: int = 0
    collisions: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def as_list(self) -> list[dict[str, Any]]:
        """``eval --json``: one dict per skill, each with the skills it collides with."""
        out = []
        for r in self.results:
            d = r.as_dict()
            d["collides_with"] = [n for c in self.collisions for n in c["skills"] if r.name in c["skills"]
                                  and n != r.name]
            out.append(d)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"k": self.k, "min_recall": self.min_recall, "max_false": self.max_false, "passed": self.passed,
                "skills": [r.as_dict() for r in self.results], "without_evals": self.without_evals,
                "collisions": self.collisions}


def findability_line(before: dict, after: dict) -> str:
    """``findability: 9/10 → 6/10`` (should-trigger queries that find the skill in the top k)."""
    return f"findability: {before['found']}/{before['of']} → {after['found']}/{after['of']}"


class Evals:
    """Trigger evals through the search agents use. ``search`` (query, k) -> hits, each with
    ``id``, ``name`` and ``copy_ids`` (the facade's search as an agent's, not logged);
    ``resolve`` a name or id to its record; ``every`` () -> the active records; ``copies`` a
    name -> its copies' rows; ``authored`` a skill folder -> its ``catalog.eval_files.EvalSet``;
    ``settings`` () -> ``config.EvalConfig``; ``trial`` a copy of the index for a change
    (``search.trial.Trial``), or None."""

    def __init__(self, evidence: Any, *, search: Callable[[str, int], list], resolve: Callable[[str], Any],
                 every: Callable[[], Iterable[Any]], copies: Callable[[str], list], authored: Callable[[Any], Any],
                 settings: Callable[[], Any], trial: Any = None):
        self.evidence = evidence
        self._search = search
        self._resolve = resolve
        self._every = every
        self._copies = copies
        self._authored = authored
        self._settings = settings
        self._trial = trial

    @classmethod
    def on(cls, store: Any, team: Any = None, **kw: Any) -> Evals:
        """The service on the store the usage log is in (``team``: the team store, or None)."""
        return cls(evidence_store(store, team), **kw)

    # --- which queries ---------------------------------------------------------------
    def _ids(self, rec: Any) -> set[str]:
        return {rec.id} | {r["id"] for r in self._copies(rec.name)}

    def queries(self, rec: Any, learned_keys: set[str] | None = None) -> tuple[str, list[Any], list[dict]]:
        """(source, queries, findings) of a skill: its eval files when it keeps any, else the
        requests reported as worked for it (each a should-trigger query). ``learned_keys``: the
        name keys of the skills any request worked for (others are not looked up)."""
        authored = self._authored(rec.folder)
        if authored.present:
            return "authored", list(authored.queries), [f.as_dict() for f in authored.findings]
        if learned_keys is not None and name_key(rec.name) not in learned_keys:
            return "none", [], []
        learned = self.evidence.worked_requests(sorted(self._ids(rec)), LEARNED_MAX)
        if learned:
            from types import SimpleNamespace

            return "learned", [SimpleNamespace(query=q, should_trigger=True, split="learned") for q in learned], []
        return "none", [], []

    # --- running ---------------------------------------------------------------------
    def _score(self, rec: Any, source: str, queries: list[Any], k: int, search: Callable[[str, int], list],
               ids: set[str] | None = None) -> SkillEval:
        ids = ids or self._ids(rec)
        res = SkillEval(rec.name, rec.id, source, k)
        depth = max(k, 10)      # a miss says where the skill came, when it came close
        for q in queries:
            hits = search(q.query, depth)
            rank = next((i for i, h in enumerate(hits, 1) if h.id in ids or ids.intersection(h.copy_ids)), None)
            top = rank is not None and rank <= k
            first = [h.name for h in hits[:min(k, (rank or k + 1) - 1)]][:FIRST_SHOWN]
            if q.should_trigger:
                res.positives += 1
                if q.split in ("train", "validation"):
                    part = res.splits.setdefault(q.split, {"found": 0, "of": 0})
                    part["of"] += 1
                    part["found"] += int(top)
                if top:
                    res.found += 1
                else:
                    res.misses.append(Miss(q.query, q.split, first, rank))
            else:
                res.negatives += 1
                if top:
                    res.false_triggers.append(Miss(q.query, q.split, first, rank))
        return res

    def run(self, names: Iterable[str] = (), *, everything: bool = False, k: int = 5) -> EvalRun:
        """Run the evals of the named skills (or, ``everything``, of every active skill that
        has evals) through the agents' search, top ``k``."""
        if not 1 <= int(k) <= 50:
            raise ValidationError(f"--k {k} is out of range", fix="use a k from 1 to 50 (agents read about 5 hits)")
        names = list(names)
        if not names and not everything:
            raise ValidationError("no skill named", fix="pass skill names, or --all for every skill with evals")
        cfg = self._settings()
        recs: list[Any] = [self._resolve(n) for n in names]
        if everything:
            seen = {r.id for r in recs}
            recs += [r for r in self._every() if r.id not in seen]
        run = EvalRun(int(k), cfg.min_recall, cfg.max_false, [])
        keys = {name_key(n) for n in self.evidence.worked_names()}
        for rec in recs:
            source, queries, findings = self.queries(rec, keys)
            if source == "none" and everything and rec.name not in names and rec.id not in names:
                run.without_evals += 1
                continue
            res = self._score(rec, source, queries, int(k), self._search)
            res.findings = findings
            res.judge(cfg.min_recall, cfg.max_false)
            run.results.append(res)
        if everything:
            run.collisions = collisions(run.results)
        return run

    def init(self, name_or_id: str) -> dict[str, Any]:
        """Write ``evals/eval_queries.json`` for a workspace skill from what the usage log holds:
        the requests reported as worked for it (should trigger) and near misses, requests that
        showed it but were reported as worked for another skill (should not), for the owner to
        edit. An existing file is never overwritten."""
        rec = self._resolve(name_or_id)
        if not rec.writable:
            raise PolicyError(f"{rec.name} is in a collection skillshelf does not write to ({rec.id})",
                              fix=f"write {rec.folder}/evals/eval_queries.json yourself, or copy the skill into the "
                                  "workspace first")
        path = rec.folder / "evals" / "eval_queries.json"
        if path.exists() or path.is_symlink():
            raise ConflictError(f"{rec.name} already keeps {path}", fix="edit it, or delete it to start again")
        ids = sorted(self._ids(rec))
        pos = self.evidence.worked_requests(ids, LEARNED_MAX)
        neg = [q for q in self.evidence.near_misses(ids, LEARNED_MAX) if q not in pos]
        if not pos and not neg:
            raise NotFoundError(f"no request was reported for {rec.name} or beside it yet",
                                fix='write the file by hand: [{"query": "a request it serves", '
                                    '"should_trigger": true}, {"query": "a near miss", "should_trigger": false}]')
        items = [{"query": q, "should_trigger": True} for q in pos] + \
            [{"query": q, "should_trigger": False} for q in neg]
        atomic_write(contained(rec.folder, path), json.dumps(items, indent=2, ensure_ascii=False) + "\n")
        return {"name": rec.name, "path": str(path), "should_trigger": len(pos), "should_not": len(neg)}

    # --- outcomes per version --------------------------------------------------------
    def versions(self, name_or_id: str) -> dict[str, Any]:
        """A skill's outcomes per version (of every copy of it): reports, worked, failed, rate
        and a 95 % Wilson interval each, and ``worse`` when its current version does worse than
        the one before it (with the rollback command), else None."""
        rec = self._resolve(name_or_id)
        counts: dict[int, list[int]] = {}
        for _, v, worked, n in self.evidence.version_outcomes(sorted(self._ids(rec))):
            c = counts.setdefault(v, [0, 0])
            c[0] += worked
            c[1] += n
        rows = version_rows(counts)
        return {"name": rec.name, "current": rec.version, "versions": rows,
                "worse": worse_than_before(rec.name, rec.version, rows, self._settings().min_reports)}

    def worse_versions(self) -> list[dict[str, Any]]:
        """Every skill whose current version does worse than the one before it, with enough
        reports (``eval.min_reports`` each, intervals apart): what ``stats`` and ``report`` list."""
        by_skill: dict[str, dict[int, list[int]]] = {}
        for sid, v, worked, n in self.evidence.version_outcomes(None):
            c = by_skill.setdefault(sid, {}).setdefault(v, [0, 0])
            c[0] += worked
            c[1] += n
        out: dict[str, dict] = {}
        for sid in by_skill:
            try:
                rec = self._resolve(sid)
            except NotFoundError:      # a skill that has gone since: nothing to roll back
                continue
            if rec.name in out:
                continue
            found = self.versions(rec.id)["worse"]
            if found is not None:
                out[rec.name] = found
        return sorted(out.values(), key=lambda w: w["name"])

    # --- a change, before it lands ---------------------------------------------------
    def judge_change(self, skill_id: str, text: str, action: str = "FIX", name: str = "") -> dict[str, Any] | None:
        """The skill's evals (authored, else learned) on the index as it is and with ``text``
        as its SKILL.md (a FIX), or with ``text`` added as a new skill ``name`` beside it (a
        DERIVE: the child may take its parent's requests), in a copy of the index (the real one
        is not written). None when the skill has no evals or no trial index is available. Under
        ``eval.guard = "refuse"`` a change that drops the skill's recall below
        ``eval.min_recall`` raises ``PolicyError``."""
        cfg = self._settings()
        if cfg.guard == "off" or self._trial is None:
            return None
        rec = self._resolve(skill_id)
        source, queries, findings = self.queries(rec)
        if not any(q.should_trigger for q in queries):
            return None
        k = 5
        ids = self._ids(rec)
        with self._trial.open() as trial:
            before = self._score(rec, source, queries, k, trial.search, ids)
            if action == "DERIVE":
                trial.add(name, text)
            else:
                trial.replace(rec, text)
            after = self._score(rec, source, queries, k, trial.search, ids)
        b = {"found": before.found, "of": before.positives, "false": len(before.false_triggers),
             "negatives": before.negatives}
        a = {"found": after.found, "of": after.positives, "false": len(after.false_triggers),
             "negatives": after.negatives}
        was = {m.query for m in before.misses}
        lost = [m.as_dict() for m in after.misses if m.query not in was]
        below = after.recall is not None and after.recall < cfg.min_recall and after.found < before.found
        report = {"skill": rec.name, "source": source, "k": k, "before": b, "after": a,
                  "line": findability_line(b, a), "lost": lost, "worse": after.found < before.found,
                  "below_floor": below, "min_recall": cfg.min_recall, "guard": cfg.guard}
        if below and cfg.guard == "refuse":
            firsts = "; ".join(f"{m['query'][:60]!r} now finds {', '.join(m['first']) or 'nothing'} first"
                               for m in lost[:2])
            raise PolicyError(f"{action} of {rec.name} refused: {report['line']} on its {source} evals, below "
                              f"eval.min_recall {cfg.min_recall:.0%} ({firsts})",
                              fix="keep the words its requests use in the name, description or tags (run "
                                  f"`skillshelf eval {rec.name}`), or set eval.guard = \"warn\" in config.toml")
        return report


def wilson(worked: int, reports: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson score interval of a success rate (0, 1 with no reports)."""
    if reports <= 0:
        return 0.0, 1.0
    p = worked / reports
    d = 1 + z * z / reports
    mid = (p + z * z / (2 * reports)) / d
    half = z * math.sqrt(p * (1 - p) / reports + z * z / (4 * reports * reports)) / d
    return max(0.0, mid - half), min(1.0, mid + half)


def version_rows(counts: dict[int, list[int]]) -> list[dict[str, Any]]:
    """One row per version: reports, worked, failed, rate and its Wilson interval."""
    out = []
    for v in sorted(counts):
        worked, reports = counts[v]
        low, high = wilson(worked, reports)
        out.append({"version": v, "reports": reports, "worked": worked, "failed": reports - worked,
                    "rate": round(worked / reports, 4) if reports else None, "low": round(low, 4),
                    "high": round(high, 4)})
    return out


def worse_than_before(name: str, current: int, rows: list[dict[str, Any]], min_reports: int) -> dict | None:
    """The current version when it does worse than the version before it that has reports: both
    with at least ``min_reports`` reports and their intervals apart. With the rollback command."""
    cur = next((r for r in rows if r["version"] == current), None)
    prev = next((r for r in reversed(rows) if r["version"] < current), None)
    if cur is None or prev is None or min(cur["reports"], prev["reports"]) < min_reports:
        return None
    if cur["high"] >= prev["low"]:
        return None
    return {"name": name, "version": current, "rate": cur["rate"], "reports": cur["reports"],
            "previous": prev["version"], "previous_rate": prev["rate"], "previous_reports": prev["reports"],
            "rollback": f"skillshelf rollback {name} {prev['version']}"}


def collisions(results: list[SkillEval]) -> list[dict]:
    """Pairs of skills each of which comes first on one of the other's should-trigger
    queries: merge candidates, or descriptions to sharpen."""
    took: dict[str, dict[str, int]] = {}
    for r in results:
        for m in r.misses:
            for other in m.first[:1]:
                if other != r.name:
                    took.setdefault(other, {}).setdefault(r.name, 0)
                    took[other][r.name] += 1
    out = []
    for a, victims in took.items():
        for b, n in victims.items():
            if a < b and a in took.get(b, {}):
                out.append({"skills": [a, b], "queries": n + took[b][a]})
    return sorted(out, key=lambda c: -c["queries"])
