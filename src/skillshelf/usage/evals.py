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

from ..access import AGENT, Caller, Reader, authorize
from ..errors import ConflictError, NotFoundError, PolicyError, SkillshelfError, ValidationError
from ..files import atomic_write, contained
from ..store.evidence import evidence_store
from ..text import name_key

LEARNED_MAX = 50        # learned evals per skill: the newest requests reported as worked
FIRST_SHOWN = 3         # for a miss, how many of the skills that came first are named


@dataclass
class Miss:
    query: str
    split: str
    first: list[str]            # the names of the skills that came first (up to FIRST_SHOWN)
    rank: int | None = None     # where the skill came, when it came past k (None: not in the list)
    # not in the list: the near-duplicate hit listed in its place, left out as redundant (``Hit.stands_for``)
    stood_in: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "split": self.split, "first": self.first, "rank": self.rank,
                "stood_in": self.stood_in}


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
    # every query as it went (query, should_trigger, split, passed, rank, first): what the skill page lists
    checks: list[dict[str, Any]] = field(default_factory=list)

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

    @property
    def evaluated(self) -> int:
        """How many skills had evals to run. A run that evaluated none checked nothing: a gate
        on it fails, whether it named the skills or asked for ``--all``."""
        return sum(r.source != "none" for r in self.results)

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
    (``search.trial.Trial``), or None; ``policy`` () -> ``evolution.findability`` (warn or
    block); ``embed`` a list of queries -> their vectors in one batch, or None without an
    embedder (``search`` then takes a query's vector as a third argument); ``cache`` keeps the
    last ``--all`` run's summary (``get_meta`` / ``set_meta``, the local index), or None."""

    def __init__(self, evidence: Any, *, search: Callable[..., list], resolve: Callable[[str], Any],
                 every: Callable[[], Iterable[Any]], copies: Callable[[str], list], authored: Callable[[Any], Any],
                 settings: Callable[[], Any], trial: Any = None, policy: Callable[[], str] = lambda: "warn",
                 embed: Callable[[list[str]], Any] | None = None, cache: Any = None,
                 hidden: Callable[[], Iterable[str]] = frozenset):
        self.evidence = evidence
        self._search = search
        self._resolve = resolve
        self._every = every
        self._copies = copies
        self._authored = authored
        self._settings = settings
        self._trial = trial
        self._policy = policy
        self._embed = embed
        self._cache = cache
        self._hidden = hidden       # the skill ids held back from agents (``supply.hidden_ids``)

    @classmethod
    def on(cls, store: Any, team: Any = None, **kw: Any) -> Evals:
        """The service on the store the usage log is in (``team``: the team store, or None);
        the last ``--all`` run is kept in ``store`` (this server's index)."""
        return cls(evidence_store(store, team), cache=store, **kw)

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
    def _score(self, rec: Any, source: str, queries: list[Any], k: int, search: Callable[..., list],
               match: Callable[[Any], bool] | None = None, vectors: dict[str, Any] | None = None) -> SkillEval:
        """``match``: which hit is the skill (by default its id or a copy's); ``vectors``: each
        query's embedding, computed beforehand in one batch (``search`` then takes it)."""
        ids = self._ids(rec)
        match = match or (lambda h: h.id in ids or bool(ids.intersection(h.copy_ids)))
        res = SkillEval(rec.name, rec.id, source, k)
        depth = max(k, 10)      # a miss says where the skill came, when it came close
        for q in queries:
            vec = vectors.get(q.query) if vectors else None
            hits = search(q.query, depth) if vec is None else search(q.query, depth, vec)
            rank = next((i for i, h in enumerate(hits, 1) if match(h)), None)
            top = rank is not None and rank <= k
            first = [h.name for h in hits[:min(k, (rank or k + 1) - 1)]][:FIRST_SHOWN]
            res.checks.append({"query": q.query, "should_trigger": q.should_trigger, "split": q.split,
                               "passed": top == q.should_trigger, "rank": rank, "first": first})
            if q.should_trigger:
                res.positives += 1
                if q.split in ("train", "validation"):
                    part = res.splits.setdefault(q.split, {"found": 0, "of": 0})
                    part["of"] += 1
                    part["found"] += int(top)
                if top:
                    res.found += 1
                else:
                    stood = None if rank is not None else next(
                        (h.name for h in hits if ids.intersection(getattr(h, "stands_for", ()))), None)
                    res.misses.append(Miss(q.query, q.split, first, rank, stood))
            else:
                res.negatives += 1
                if top:
                    res.false_triggers.append(Miss(q.query, q.split, first, rank))
        return res

    def run(self, names: Iterable[str] = (), *, everything: bool = False, k: int = 5,
            caller: Caller | None = None) -> EvalRun:
        """Run the evals of the named skills (or, ``everything``, of every active skill that
        has evals) through the agents' search, top ``k``. Every skill's evals (one search per
        query: minutes on a large library) are a curator's to start (``run_evals``); ``caller``
        None is the owner."""
        if everything:
            authorize(caller, "run_evals", "running every skill's evals")
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
        todo = []
        for rec in recs:
            source, queries, findings = self.queries(rec, keys)
            if source == "none" and everything and rec.name not in names and rec.id not in names:
                run.without_evals += 1
                continue
            todo.append((rec, source, queries, findings))
        vectors = self._vectors([q.query for _, _, qs, _ in todo for q in qs])
        for rec, source, queries, findings in todo:
            res = self._score(rec, source, queries, int(k), self._search, vectors=vectors)
            res.findings = findings
            res.judge(cfg.min_recall, cfg.max_false)
            run.results.append(res)
        if everything:
            run.collisions = collisions(run.results)
            self._remember(run)
        return run

    def of_skill(self, name_or_id: str, k: int = 5) -> dict[str, Any]:
        """One skill's evals for its page: the authored ones (its eval files) and the learned
        ones (requests reported as worked for it), each run apart (None when it has none), every
        query with whether it passed and what came first."""
        rec = self._resolve(name_or_id)
        cfg = self._settings()
        authored = self._authored(rec.folder)
        sets: dict[str, tuple[list[Any], list[dict]]] = {}
        if authored.present:
            sets["authored"] = (list(authored.queries), [f.as_dict() for f in authored.findings])
        learned = self.evidence.worked_requests(sorted(self._ids(rec)), LEARNED_MAX)
        if learned:
            from types import SimpleNamespace

            sets["learned"] = ([SimpleNamespace(query=q, should_trigger=True, split="learned") for q in learned], [])
        vectors = self._vectors([q.query for qs, _ in sets.values() for q in qs])
        out: dict[str, Any] = {"name": rec.name, "id": rec.id, "k": k, "min_recall": cfg.min_recall,
                               "max_false": cfg.max_false, "authored": None, "learned": None}
        for source, (qs, findings) in sets.items():
            res = self._score(rec, source, qs, k, self._search, vectors=vectors)
            res.findings = findings
            res.judge(cfg.min_recall, cfg.max_false)
            out[source] = res
        return out

    def _vectors(self, queries: list[str], batch: int = 256) -> dict[str, Any]:
        """Each distinct query's embedding, computed in batches (one model call per ``batch``
        queries rather than one per search); empty without an embedder."""
        embed = self._embed
        distinct = list(dict.fromkeys(queries))
        if embed is None or not distinct:
            return {}
        out: dict[str, Any] = {}
        for i in range(0, len(distinct), batch):
            part = distinct[i:i + batch]
            vecs = embed(part)
            if vecs is None:        # no model loaded: each search embeds its own query
                return {}
            out.update(zip(part, vecs))
        return out

    # --- the last run of every skill's evals, for Curate --------------------------------
    CACHE_KEY = "evals.last_all"

    def _remember(self, run: EvalRun) -> None:
        """Keep what Curate shows of an ``--all`` run: the skills that failed and the
        collisions (a failed write of this cache is not the run's failure)."""
        if self._cache is None:
            return
        from datetime import UTC, datetime

        failed = [{"name": r.name, "id": r.id, "source": r.source, "found": r.found, "positives": r.positives,
                   "false": len(r.false_triggers), "negatives": r.negatives, "recall": r.as_dict()["recall"],
                   "false_rate": r.as_dict()["false_rate"],
                   "misses": [m.as_dict() for m in r.misses[:FIRST_SHOWN]],
                   # a malformed eval file is why it failed, whatever the counts say: Curate names it
                   "findings": [f for f in r.findings if f["severity"] in ("fatal", "error")][:FIRST_SHOWN]}
                  for r in run.results if not r.passed]
        summary = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "k": run.k,
                   "skills": len(run.results), "without_evals": run.without_evals, "failed": failed,
                   "collisions": run.collisions, "min_recall": run.min_recall, "max_false": run.max_false}
        try:
            self._cache.set_meta(self.CACHE_KEY, json.dumps(summary, ensure_ascii=False))
        except Exception:   # noqa: BLE001 — a read-only or busy index: the run stands, uncached
            return

    def last_all(self, reader: Reader = AGENT) -> dict[str, Any] | None:
        """The summary of the last ``eval --all`` (or Curate's run) on this server, or None. For an
        agent's reader (a reader's or agent's token) the skills held back from agents are left out:
        their eval queries, and any collision or "came first" naming them."""
        if self._cache is None:
            return None
        try:
            raw = self._cache.get_meta(self.CACHE_KEY)
            last = json.loads(raw) if raw else None
        except (ValueError, TypeError):
            return None
        hidden = set(self._hidden()) if reader.agent else set()
        if not hidden or not isinstance(last, dict):
            return last
        names = set()
        for sid in hidden:
            try:
                names.add(self._resolve(sid).name)
            except SkillshelfError:
                continue
        failed = [f for f in last.get("failed") or [] if f.get("id") not in hidden]
        for f in failed:
            f["misses"] = [dict(m, first=[n for n in m.get("first") or [] if n not in names])
                           for m in f.get("misses") or []]
        return dict(last, failed=failed, collisions=[c for c in last.get("collisions") or []
                                                     if not names & set(c.get("skills") or [])])

    def init(self, name_or_id: str) -> dict[str, Any]:
        """Write ``evals/eval_queries.json`` for a workspace skill from what the usage log holds:
        the requests reported as worked for it (should trigger) and near misses, requests that
        showed it but were reported as worked for another skill (should not), for the owner to
        edit. An existing file is never overwritten."""
        rec = self._resolve(name_or_id)
        if not rec.writable:
            raise PolicyError(f"{rec.name} is in a collection skillshelf does not write to ({rec.id})",
                              # a fetched source's folder is checked against skillshelf.lock: never
                              # send the owner to write into it
                              fix="write evals/eval_queries.json where the collection is kept (its repository), or "
                                  "edit the skill once so the workspace holds a copy, then run "
                                  f"`skillshelf eval {rec.name} --init` again")
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
    def judge_change(self, sources: str | list[str], text: str, action: str = "FIX",
                     name: str = "") -> dict[str, Any] | None:
        """What a change does to the findability of the skills it comes from, on a copy of the
        index (the real one is not written): each source's evals (authored, else learned) on
        the index as it is, then with the change in it. A FIX puts ``text`` in place of its
        skill's SKILL.md; a DERIVE adds ``text`` as a new skill ``name`` beside its parent (the
        child may take its parent's requests, the parent must still be found); a MERGE writes
        ``text`` as ``name`` and retires the other sources, and the merged skill must be found
        for every source's should-trigger queries. None when no source keeps evals or no trial
        index is available. A change that loses more than one query is a ``warning`` in the
        result, or under ``evolution.findability = "block"`` a ``PolicyError``."""
        if self._trial is None:
            return None
        ids = [sources] if isinstance(sources, str) else list(sources)
        recs = [self._resolve(i) for i in ids]
        if action != "MERGE":
            recs = recs[:1]
        judged = [(rec, *self.queries(rec)[:2]) for rec in recs]
        judged = [(rec, source, qs) for rec, source, qs in judged if any(q.should_trigger for q in qs)]
        if not judged:
            return None
        k = 5
        merged = name_key(name) if action == "MERGE" else None
        retired = {r.id for r in recs if action == "MERGE" and name_key(r.name) != merged}
        parts: list[tuple[Any, str, SkillEval, SkillEval]] = []
        with self._trial.open() as trial:
            befores = [self._score(rec, source, qs, k, trial.search) for rec, source, qs in judged]
            if action == "DERIVE":
                trial.add(name, text)
            elif action == "MERGE":
                into = next((r for r in recs if name_key(r.name) == merged), None)
                if into is not None:
                    trial.replace(into, text)
                else:
                    trial.add(name, text)
            else:
                trial.replace(recs[0], text)

            def search(q: str, n: int) -> list:
                hits = trial.search(q, n + len(retired))
                return [h for h in hits if h.id not in retired][:n]

            for (rec, source, qs), before in zip(judged, befores):
                if merged is not None:      # the merged skill is found in the sources' place
                    after = self._score(rec, source, qs, k, search, match=lambda h: name_key(h.name) == merged)
                else:
                    after = self._score(rec, source, qs, k, search)
                parts.append((rec, source, before, after))
        return self._verdict(action, name, parts, k)

    def _verdict(self, action: str, name: str, parts: list[tuple[Any, str, SkillEval, SkillEval]],
                 k: int) -> dict[str, Any]:
        def counts(evs: list[SkillEval]) -> dict[str, int]:
            return {"found": sum(e.found for e in evs), "of": sum(e.positives for e in evs),
                    "false": sum(len(e.false_triggers) for e in evs), "negatives": sum(e.negatives for e in evs)}

        b, a = counts([p[2] for p in parts]), counts([p[3] for p in parts])
        lost: list[dict[str, Any]] = []
        for rec, _, before, after in parts:
            was = {m.query for m in before.misses}
            lost += [{**m.as_dict(), "skill": rec.name} for m in after.misses if m.query not in was]
        sources = sorted({p[1] for p in parts})
        setting = self._policy()
        report: dict[str, Any] = {
            "skill": parts[0][0].name if action != "MERGE" else name, "action": action,
            "source": sources[0] if len(sources) == 1 else " and ".join(sources), "k": k, "before": b, "after": a,
            "line": findability_line(b, a), "lost": lost, "worse": a["found"] < b["found"],
            # what the setting judges: the queries this change loses, not the net (gaining two
            # others does not give the two lost back to the people who ask them)
            "dropped": len(lost), "setting": setting, "warning": None}
        if action == "MERGE":
            report["sources"] = [{"skill": rec.name, "source": source, "line": findability_line(counts([bf]),
                                  counts([af]))} for rec, source, bf, af in parts]
        if report["dropped"] <= 1:
            return report
        firsts = "; ".join(f"{m['query'][:60]!r} now finds {', '.join(m['first']) or 'nothing'} first"
                           for m in lost[:2])
        whose = f"{report['skill']}'s" if action != "MERGE" else "its sources'"
        said = f"{report['line']} on {whose} {report['source']} evals: {report['dropped']} should-trigger queries lost"
        if setting == "block":
            raise PolicyError(f"{action} of {report['skill']} refused by evolution.findability = \"block\": {said}"
                              f" ({firsts})",
                              fix="keep the words its requests use in the name, description or tags (run "
                                  f"`skillshelf eval {parts[0][0].name}`), or set [evolution] findability = "
                                  "\"warn\" in config.toml")
        report["warning"] = f"warning: {said} ({firsts}); see `skillshelf eval {parts[0][0].name}`"
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
