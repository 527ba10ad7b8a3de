"""The hits a search returns: which copy of a group of copies each shows, and what it says.

Copies (skills whose names share a name key) collapse into one hit. The copy shown is one in
the request's language (``language.py``); among those the best-ranked one, or, when the
others hold the same text, the one a lookup by name returns (the original collection's)."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..catalog.roots import precedence_key
from ..config import SearchConfig
from ..text import trim
from .language import text_language
from .state import Snapshot

# Calibrated on requests-dev.jsonl (bench/calibrate.py): a request counts as served when
# one of the first three hits has cosine >= this value to the query, scored as the dense
# list ranks (the better of the skill's metadata and body vectors, all-MiniLM-L6-v2).
# 0.43 maximises Youden's J (gap requests flagged − good requests flagged) on the
# development set; the max-sim signal separates gaps better than the metadata cosine alone
# (AUC 0.88 vs 0.83). Other embedding models need their own value (search.confident_threshold).
CONFIDENT_COSINE = 0.43

# Which copy of a group of copies (same name) a hit shows, among the copies in the request's
# language: "same" -- the best-ranked one, or the original (the copy a lookup by name returns)
# when it holds the same text; "ranked" -- the best-ranked one; "original" -- the original
# whatever its text; "off" -- the best-ranked copy in any language (the rule before). Only
# "same" is meant for use: the others are kept so bench/quality.py can measure them
# (BENCHMARKS.md, "Search results").
SHOW_COPY = "same"
# Two copies with this cosine (metadata or body vectors) hold the same text: mirrors of one
# skill, shown as the original. The value is the library's near-duplicate threshold.
COPY_COSINE = 0.85


@dataclass
class Hit:
    id: str
    name: str
    path: str
    score: float
    match: str                      # likely | weak
    description: str
    display_name: str
    skill_type: str | None
    repo: str | None
    version: int
    tags: list[str]
    copies: int = 1                 # how many same-named skills this hit stands for
    copy_ids: list[str] = field(default_factory=list)
    active: bool = True
    expired: bool = False
    lineage: list[str] = field(default_factory=list)
    wildcard: bool = False
    ref: str = ""                   # what to pass to get_skill: the name, or the id when the
                                    # name would resolve to another copy
    why: str | None = None          # its strongest signals, then what outcomes did to its rank
    learned: str | None = None      # what outcomes of similar requests say and did, if any
    risk: str = "none"              # its audit's worst finding: none | low | medium | high
    hidden: str | None = None       # a person's search: why agents do not see it (held, blocked)
    # ids of near-duplicates under other names its relevance alone would have shown, left out as redundant
    stands_for: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["hidden"] is None:
            del d["hidden"]         # (only a person's search marks hidden skills)
        return d


@dataclass
class SearchResult:
    query: str
    mode: str
    hits: list[Hit]
    confident: bool
    degraded: str | None            # None, or why search is lexical-only
    query_id: int | None = None
    latency_ms: float = 0.0
    # the request's vector (not serialised): a report on this request is learned with it
    request_vector: Any = field(default=None, repr=False, compare=False)
    # what the confidence flag was decided from (not serialised; bench/ranker.py fits on it)
    signals: dict = field(default_factory=dict, repr=False, compare=False)
    # the index is being built or another process is indexing (``degraded`` says how far): a
    # request not served now may be served once it ends, so it is not a gap
    partial: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "confident": self.confident,
                "degraded": self.degraded, "query_id": self.query_id,
                "latency_ms": round(self.latency_ms, 2), "hits": [h.as_dict() for h in self.hits]}


def lineage(meta_json: str) -> list[str]:
    """The skills a skill was derived from, as its metadata names them."""
    try:
        m = json.loads(meta_json or "{}")
    except ValueError:
        return []
    chain = m.get("lineage") or m.get("derived-from") or ""
    return [x.strip() for x in chain.split(",") if x.strip()]


class Hits:
    """Builds the hits of a search from skill rows: the copy each shows and its fields."""

    def __init__(self, settings: SearchConfig, canonical: list[str]):
        self.s = settings
        self.canonical = canonical
        self._langs: dict[tuple, tuple[str, str]] = {}   # (rowid, content hash) -> languages

    def threshold(self) -> float:
        """The cosine at which a hit's score alone makes it a likely match."""
        return self.s.confident_threshold or CONFIDENT_COSINE

    def language(self, row) -> tuple[str, str]:
        """(language of the description, language of the body's opening) of a skills row."""
        key = (row["rowid"], row["content_hash"])
        got = self._langs.get(key)
        if got is None:
            got = (text_language(row["description"]) if (row["description"] or "").strip() else "",
                   text_language(row["opening"]) if (row["opening"] or "").strip() else "")
            if len(self._langs) > 50_000:
                self._langs.clear()
            self._langs[key] = got
        return got

    def shown_copy(self, meta: Snapshot, rows: dict[int, Any], p: int, qlang: str, allowed,
                    fused: dict[int, float] | None = None, vecs: tuple = ()) -> int:
        """The copy of ``p``'s group to show. Only copies in the request's language compete
        (both description and body opening in it when such a copy exists, else one of
        them); ``p`` itself when none is. Among them the best-ranked one, or, when other
        copies have the same text (cosine >= ``COPY_COSINE`` by metadata or body vector:
        mirrors of one skill, not different skills that share a name), the one a lookup by
        name returns: the original collection's, by precedence."""
        group = [int(i) for i in meta.members(p)]
        if len(group) == 1 or SHOW_COPY == "off":
            return p
        def original(cands: list[int]) -> int:
            return min(cands, key=lambda i: precedence_key(rows[i]["kind"], rows[i]["rel"], rows[i]["id"],
                                                           self.canonical))

        tiers: dict[int, list[int]] = {}
        for i in group:
            if i not in rows or (allowed is not None and not allowed[i]) or not meta.active[i]:
                continue
            desc, opening = self.language(rows[i])
            parts = [x for x in (desc, opening) if x]
            # a missing part (no description, an empty body) counts as agreeing
            tier = 2 if parts and all(x == qlang for x in parts) else int(qlang in parts)
            if tier:
                tiers.setdefault(tier, []).append(i)
        if not tiers:
            return p
        cands = tiers[max(tiers)]
        fused = fused or {}
        ranked = [i for i in cands if fused.get(i)]
        best = max(ranked, key=lambda i: fused[i]) if ranked else original(cands)
        if SHOW_COPY == "ranked":
            return best
        if SHOW_COPY == "original":
            return original(cands)
        same = [best]
        for i in cands:
            if i != best and any(ix is not None and ix.has[i] and ix.has[best]
                                 and float(ix.vectors([i])[0] @ ix.vectors([best])[0]) >= COPY_COSINE
                                 for ix in vecs):
                same.append(i)
        return original(same)

    def hit(self, meta: Snapshot, rows: dict[int, Any], p: int, q: int, cos) -> Hit:
        """The hit for group representative ``p`` (the copy that ranked), shown as its copy
        ``q``; ``rows`` holds the rows of the group. Its score is the max-sim cosine of the
        request to the better of the two copies (the group's evidence), 0 without vectors."""
        row = rows[q]
        group = meta.members(p)
        copy_ids: list[str] = []
        ref = row["name"]
        if len(group) > 1:
            # (a deprecated or merged copy is not offered as another place to read it)
            copy_ids = [rows[int(i)]["id"] for i in group if int(i) != q and int(i) in rows and meta.active[int(i)]]
            same = [rows[int(i)] for i in group if int(i) in rows and rows[int(i)]["name"] == row["name"]]
            winner = min(same, key=lambda r: precedence_key(r["kind"], r["rel"], r["id"], self.canonical))
            ref = row["name"] if winner["id"] == row["id"] else row["id"]
        sims = [c for c in ((cos(p), cos(q)) if cos is not None else ()) if c is not None]
        score = max(sims) if sims else 0.0
        likely = bool(sims) and score >= self.threshold()
        return Hit(
            id=row["id"], name=row["name"], path=row["path"], score=round(float(score), 3),
            match="likely" if likely else "weak", description=trim(row["description"], self.s.description_chars),
            display_name=row["display_name"] or row["name"], skill_type=row["skill_type"], repo=row["repo"],
            version=row["version"], tags=[t for t in (row["tags"] or "").split(",") if t], copies=len(group),
            copy_ids=copy_ids[:10], active=bool(row["active"]),
            expired=bool(meta.expires[q] and meta.expires[q] < _dt.date.today().toordinal()),
            lineage=lineage(row["metadata"]), ref=ref)
