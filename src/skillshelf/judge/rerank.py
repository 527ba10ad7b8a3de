"""The optional model judge: a second opinion on the shortlist search already made.

Two jobs, both off by default (``judge.backend = "none"``), neither ever changing what
plain search returns when it is off:

* **rerank** -- the model reads the request and the shortlist (names and descriptions
  only) and orders it by fit (1-10), with one ``why`` / ``why_not`` per candidate and a
  final ``pick``. It reorders the already-diversified hits, so it cannot bring back
  near-duplicates; brainstorm (which wants divergence) is never judged.
* **filter** (soft filter) -- the model marks the top ``judge.soft_filter_top`` hits
  ``likely`` or ``weak``; likely ones move first, nothing is dropped.

Backends (``judge_backends``): Ollama ``/api/chat``, any OpenAI-compatible
``/v1/chat/completions`` and, as ``local``, an ONNX cross-encoder file the owner supplies
(no PyPI package ships one: see BENCHMARKS.md, "Model judge"). Nothing is downloaded.
Prompts and the reading of answers: ``judge_prompts``. This module: the judgements and the
``Judge`` service.

Rules every backend is held to (the_librarian's, for any model):

* a timeout (``judge.timeout``, default 30 s) or any failure returns the plain order,
  flagged in the result (``judge: "timeout"`` / ``judge: "error: ..."``);
* the answer is validated against the real candidates: invented names are dropped,
  repeats ignored, candidates the model left out are appended in plain order;
* skill text is someone else's text: names and descriptions reach the model with control
  characters and line breaks removed, one JSON line each inside a ``<candidates>`` fence
  (``<`` and ``>`` escaped, so no text can close it), with an instruction to treat them as
  data;
* every judged search appends one row to the judge log (``store.judge.JudgeLog``: model,
  latency, verdicts), summarised by ``skillshelf stats``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..checks import Check
from ..config import JudgeConfig
from ..errors import ConfigError, ValidationError, write_failure
from ..search.pipeline import Hit, SearchResult
from ..store import now
from ..store.protocols import JudgeLogStore
from .audit_opinion import AuditOpinion
from .backends import ChatBackend, CrossEncoderBackend, make_backend
from .prompts import (JudgeFailure, JudgeTimeout, Verdict, build_filter_prompt, build_rerank_prompt, clean_text,
    parse_answer, validate_ranking, validate_verdicts)

__all__ = ["JUDGE_MODES", "Judge", "JudgedResult", "Verdict", "ChatBackend", "CrossEncoderBackend",
           "JudgeFailure", "JudgeTimeout", "clean_text", "build_rerank_prompt", "build_filter_prompt",
           "parse_answer", "validate_ranking", "validate_verdicts", "rerank", "soft_filter", "judge_result",
           "make_backend"]

JUDGE_MODES = ("rerank", "filter", "both")


# --- the judgements ----------------------------------------------------------------------

def _ids(hits: list[Hit]) -> list[str]:
    """What the model calls each candidate: its name, cleaned (names are distinct in a
    shortlist: copies collapse into one hit), numbered when two clean to the same text."""
    out: list[str] = []
    seen: set[str] = set()
    for h in hits:
        base = clean_text(h.name, 80) or "skill"
        i, n = base, 2
        while i in seen:
            i, n = f"{base}#{n}", n + 1
        seen.add(i)
        out.append(i)
    return out


def _passage(h: Hit, chars: int) -> str:
    return f"{clean_text(h.name, 80)}: {clean_text(h.description, chars)}"


def rerank(backend, query: str, hits: list[Hit], *, deadline: float, chars: int = 300) \
        -> tuple[list[int], dict[int, Verdict], int | None, list[str]]:
    """(order, verdicts, pick, invented) for ``hits``; raises ``JudgeFailure`` /
    ``JudgeTimeout``."""
    ids = _ids(hits)
    if isinstance(backend, CrossEncoderBackend):
        scores = backend.score(clean_text(query, 600), [_passage(h, chars) for h in hits], deadline=deadline)
        order = sorted(range(len(hits)), key=lambda n: (-scores[n], n))
        return order, {n: Verdict(score=round(scores[n], 3)) for n in order}, order[0] if order else None, []
    system, user = build_rerank_prompt(query, hits, ids, chars=chars)
    answer = parse_answer(backend.chat(system, user, deadline=deadline))
    return validate_ranking(answer, ids, hits)


def soft_filter(backend, query: str, hits: list[Hit], *, deadline: float, chars: int = 300) \
        -> tuple[dict[int, str], list[str]]:
    """(likely | weak per index of ``hits``, invented names); raises ``JudgeFailure`` /
    ``JudgeTimeout``."""
    ids = _ids(hits)
    if isinstance(backend, CrossEncoderBackend):
        scores = backend.score(clean_text(query, 600), [_passage(h, chars) for h in hits], deadline=deadline)
        # a cross-encoder's logit > 0 means "relevant" more likely than not
        return {n: ("likely" if s > 0 else "weak") for n, s in enumerate(scores)}, []
    system, user = build_filter_prompt(query, hits, ids, chars=chars)
    answer = parse_answer(backend.chat(system, user, deadline=deadline))
    return validate_verdicts(answer, ids, hits)


@dataclass
class JudgedResult(SearchResult):
    """A ``SearchResult`` the judge has seen. ``judge`` says how that went: ``ok``,
    ``timeout`` or ``error: ...`` (the hits are then in plain order) or ``skipped: ...``.
    ``verdicts`` holds what the judge said per hit id (fit, why, why_not, verdict, score);
    ``as_dict`` puts it in each hit as ``judge``."""

    judge: str = "off"
    judge_mode: str | None = None
    judge_model: str | None = None
    judge_latency_ms: float = 0.0
    pick: str | None = None                      # the name of the judge's final pick
    pick_id: str | None = None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    invented: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, res: SearchResult, **kw: Any) -> "JudgedResult":
        base = {f.name: getattr(res, f.name) for f in dataclasses.fields(res) if f.init}
        base = {k: v for k, v in base.items() if k in {f.name for f in dataclasses.fields(cls)}}
        return cls(**base, **kw)

    def hit_extra(self, hit: Hit) -> dict[str, Any]:
        """What the judge said of one hit, as ``{"judge": {fit, why, why_not, verdict, score}}``
        (the keys it gave; ``{}`` for a hit it did not judge). Nested: a hit's own ``why``
        (what learning from outcomes did to its rank) is another thing."""
        v = self.verdicts.get(hit.id)
        return {"judge": v.as_dict()} if v is not None else {}

    def judge_summary(self) -> dict[str, Any]:
        d: dict[str, Any] = {"judge": self.judge, "judge_mode": self.judge_mode, "judge_model": self.judge_model,
             "judge_latency_ms": round(self.judge_latency_ms, 1), "pick": self.pick}
        if self.invented:
            d["judge_dropped"] = self.invented[:10]
        return d

    def as_dict(self) -> dict[str, Any]:
        d = super().as_dict()
        d.update(self.judge_summary())
        by_id = {h.id: h for h in self.hits}
        for hd in d.get("hits", []):
            h = by_id.get(hd.get("id"))
            if h is not None:
                hd.update(self.hit_extra(h))
        return d


def _one_line(exc: BaseException | str) -> str:
    return clean_text(str(exc) or type(exc).__name__, 200)


def judge_result(backend, res: SearchResult, mode: str, cfg: JudgeConfig,
                 descriptions: dict[str, str] | None = None) -> JudgedResult:
    """Judge the hits of ``res`` (``mode``: rerank | filter | both). ``descriptions``: the
    skills' whole descriptions by id (hits carry a shortened one), cut to
    ``cfg.description_chars`` in the prompt. Never raises for a failing model: the plain
    order comes back, flagged (``judge``: timeout | error: ...)."""
    out = JudgedResult.of(res, judge_mode=mode, judge_model=backend.label)
    if res.mode == "brainstorm":
        # brainstorm wants divergence, not convergence: never judged
        out.judge = "skipped: brainstorm is never judged"
        return out
    hits = [h for h in res.hits if not h.wildcard]
    if not hits:
        out.judge = "skipped: no hits to judge"
        return out
    t0 = time.monotonic()
    deadline = t0 + cfg.timeout
    chars = max(40, int(cfg.description_chars))
    n_judge = max(1, int(cfg.candidates))
    # what the model reads: each hit with its whole description (the hits keep theirs)
    shown = [dataclasses.replace(h, description=descriptions[h.id]) if descriptions and h.id in descriptions else h
             for h in hits]
    try:
        order = list(range(len(hits)))
        verdicts: dict[int, Verdict] = {}
        invented: list[str] = []
        if mode in ("rerank", "both"):
            head = shown[:n_judge]
            sub, v, pick, inv = rerank(backend, res.query, head, deadline=deadline, chars=chars)
            order = sub + list(range(len(head), len(hits)))
            verdicts.update(v)
            invented += inv
            if pick is not None:
                out.pick, out.pick_id = hits[pick].name, hits[pick].id
        if mode in ("filter", "both"):
            top = order[: max(1, int(cfg.soft_filter_top))]
            marks, inv = soft_filter(backend, res.query, [shown[n] for n in top], deadline=deadline, chars=chars)
            invented += inv
            for k, n in enumerate(top):
                verdicts.setdefault(n, Verdict()).verdict = marks.get(k, "weak")
            # likely first, in their order; then the rest of the top; nothing dropped
            top_sorted = [n for n in top if verdicts[n].verdict == "likely"] + \
                         [n for n in top if verdicts[n].verdict != "likely"]
            order = top_sorted + order[len(top):]
            if mode == "filter":
                out.pick = out.pick_id = None
    except JudgeTimeout:
        out.judge = "timeout"
    except JudgeFailure as exc:
        out.judge = f"error: {_one_line(exc)}"
    except ConfigError as exc:
        out.judge = f"error: {_one_line(exc.message)}"
    else:
        out.judge = "ok"
        out.hits = [hits[n] for n in order] + [h for h in res.hits if h.wildcard]
        out.verdicts = {hits[n].id: v for n, v in verdicts.items()}
        out.invented = invented
    out.judge_latency_ms = (time.monotonic() - t0) * 1000
    return out


# --- the service ---------------------------------------------------------------------------

class Judge:
    """The judge service: judged searches, the judge log and its summary, the doctor's check.

    ``config``: () -> the current ``JudgeConfig`` (read on every call: the settings may
    change); ``log``: the judge log (``store.judge.JudgeLog``); ``search``: ``(query,
    nowait, **search_kwargs) -> SearchResult``, the library's search (``nowait``: the server's
    variant that does not wait for an indexing); ``descriptions``: skill ids -> their whole
    descriptions (a hit carries a shortened one)."""

    def __init__(self, *, config: Callable[[], JudgeConfig], log: JudgeLogStore,
                 search: Callable[..., SearchResult], descriptions: Callable[[list[str]], dict[str, str]]):
        self._config = config
        self.log = log
        self._search = search
        self._descriptions = descriptions
        self._backend: Any = None
        self._backend_cfg: JudgeConfig | None = None
        # the audit's optional model pass (judge.audit), on the same settings
        self.opinion = AuditOpinion(config)

    def configured(self) -> bool:
        """True when a judge backend is set (``judge.backend`` is not ``none``)."""
        return self._config().backend not in ("none", "")

    def backend(self):
        """The configured backend (None for ``none``), made once per configuration.
        ``ConfigError`` when a setting it needs is missing."""
        cfg = self._config()
        if self._backend is None or self._backend_cfg != cfg:
            self._backend = make_backend(cfg)
            self._backend_cfg = cfg
        return self._backend

    def judged_search(self, query: str, *, judge: str | bool = "rerank", nowait: bool = False,
                      **search_kwargs: Any) -> SearchResult:
        """The search (the server's variant with ``nowait``), then the judge on its hits:
        ``judge`` is rerank | filter | both (True means rerank). The result is a
        ``JudgedResult``; a judge that times out or fails leaves the plain order, flagged.
        ``ConfigError`` when no judge is configured."""
        mode = "rerank" if judge is True else judge
        if mode not in JUDGE_MODES:
            raise ValidationError(f"unknown judge mode {judge!r}", fix=f"use one of {', '.join(JUDGE_MODES)}")
        if not self.configured():
            raise ConfigError("no model judge is configured (judge.backend is 'none')",
                              fix="set judge.backend (ollama | openai | local) and judge.model in config.toml, "
                                  "or search without the judge")
        backend = self.backend()   # a missing setting is a ConfigError before any search
        res = self._search(query, nowait, **search_kwargs)
        out = judge_result(backend, res, mode, self._config(), self.descriptions(res.hits))
        if not out.judge.startswith("skipped"):
            self.log_judgement(out)
        return out

    def judge_hits(self, res: SearchResult, judge: str = "rerank", *, log: bool = False) -> JudgedResult:
        """Judge an existing result (benches; the MCP and CLI go through ``judged_search``)."""
        if judge not in JUDGE_MODES:
            raise ValidationError(f"unknown judge mode {judge!r}", fix=f"use one of {', '.join(JUDGE_MODES)}")
        backend = self.backend()
        if backend is None:
            raise ConfigError("no model judge is configured (judge.backend is 'none')",
                              fix="set judge.backend and judge.model in config.toml")
        out = judge_result(backend, res, judge, self._config(), self.descriptions(res.hits))
        if log and not out.judge.startswith("skipped"):
            self.log_judgement(out)
        return out

    def descriptions(self, hits: list[Hit]) -> dict[str, str]:
        """The whole descriptions of the hits judged (a hit carries a shortened one)."""
        cfg = self._config()
        ids = [h.id for h in hits if not h.wildcard][: max(1, int(cfg.candidates)) + max(0, int(cfg.soft_filter_top))]
        return self._descriptions(ids) if ids else {}

    def log_judgement(self, out: JudgedResult) -> None:
        """One judge log row. A log that cannot be written leaves the answer as it is (said
        on stderr), like the query log."""
        verdicts = []
        for rank, h in enumerate(out.hits, 1):
            v = out.verdicts.get(h.id)
            if v is not None:
                verdicts.append({"rank": rank, "id": h.id, "name": h.name, **v.as_dict()})
        try:
            self.log.add(at=now(), query_id=out.query_id, mode=out.judge_mode or "", backend=self._config().backend,
                         model=out.judge_model or "", status=out.judge, latency_ms=out.judge_latency_ms,
                         candidates=len([h for h in out.hits if not h.wildcard]), invented=len(out.invented),
                         pick=out.pick_id, verdicts=verdicts)
        except Exception as exc:
            reason = write_failure(exc)
            if reason is None:
                raise
            print(f"skillshelf: judge log not written ({reason})", file=sys.stderr)

    def stats(self, *, since: str | None = None) -> dict[str, Any]:
        """A summary of the judge log: judged searches, how many answered / timed out /
        failed, median and 95th-percentile latency of the answered ones, invented names
        dropped, soft-filter verdicts, by model."""
        rows = self.log.since(since or "0000")
        ok = [r for r in rows if r["status"] == "ok"]
        lat = sorted(r["latency_ms"] for r in ok)

        def pct(p: float) -> float | None:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))], 1) if lat else None

        likely = weak = 0
        for r in ok:
            for v in r["verdicts"]:
                if isinstance(v, dict):
                    likely += v.get("verdict") == "likely"
                    weak += v.get("verdict") == "weak"
        models: dict[str, int] = {}
        for r in rows:
            models[r["model"]] = models.get(r["model"], 0) + 1
        return {"judged": len(rows), "ok": len(ok), "timeouts": sum(r["status"] == "timeout" for r in rows),
                "errors": sum(r["status"].startswith("error") for r in rows), "p50_ms": pct(0.5),
                "p95_ms": pct(0.95), "invented_dropped": sum(r["invented"] for r in rows),
                "likely": likely, "weak": weak, "models": models,
                "configured": self.configured(), "backend": self._config().backend}

    def check(self) -> Check:
        """The doctor's check: whether a judge is configured, and reachable (ok | warn;
        never fail: search works without it)."""
        cfg = self._config()
        if not self.configured():
            return Check("judge", "ok", "off (judge.backend = 'none'); optional: see the README, \"Model judge\"")
        try:
            backend = self.backend()
        except ConfigError as exc:
            return Check("judge", "warn", f"{cfg.backend}: {exc.message}; {exc.fix or ''}".rstrip("; "))
        up, detail = backend.probe(timeout=min(3.0, cfg.timeout))
        what = f"{backend.label} (timeout {cfg.timeout:g}s, soft filter top {cfg.soft_filter_top})"
        if up:
            return Check("judge", "ok", f"{what}: {detail}")
        return Check("judge", "warn", f"{what}: {detail}; judged searches will return the plain order, flagged")
