"""``Library``: the one service API. The CLI, the MCP server and the dashboard call these
methods and only format what they return."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import skill as skillmod
from .access import AGENT, PERSON, ROLES, Caller, Reader, authorize, reader_for
from .catalog import overlay as overlaymod
from .catalog.browse import PAGE_MAX, SORTS, Catalog
from .catalog.records import FileList, Listing, Records, SkillRecord  # noqa: F401  (re-exported: the facade's values)
from .catalog.resources import GatedResources, SkillResources, skill_uri
from .catalog.roots import Root, current_repo as detect_current_repo, make_roots
from .checks import Check, Clash, DoctorReport
from .config import Config, ensure_home, load as load_config
from .errors import ConfigError, ValidationError
from .evolution.comparisons import DIFF_CONTEXT, Comparisons
from .evolution.lessons import lesson_lines
from .judge.rerank import Judge
from .onboarding.doctor import without_store as _doctor_without_store
from .onboarding.unpack import read_source
from .search import sync as indexmod
from .search.indexer import RESCAN, Indexer, LazyEmbedder
from .search.pipeline import Searcher, SearchResult
from .search.trial import library_evals
from .store import Store, explain, open_shared, status as _store_status  # noqa: F401  (explain: the facade's)
from .store.audit import Audits
from .store.catalog import CatalogReads
from .store.pins import PinnedContent
from .store.records import SkillRows
from .store.skill_refs import SkillRefs
from .supply.chain import SupplyChain
from .supply.gate import ReadGate
from .supply.pins import Pins
from .supply.skill_audit import Auditor
from .supply.sources import Sources
from .usage import log as usagemod
from .usage.learning import Learner, Learning
from .usage.log import Usage

SAMPLES = ("cors-fix-nextjs-api", "docker-multi-stage-build", "git-conventional-commits")


if TYPE_CHECKING:   # pragma: no cover
    from .onboarding.importer import ExportReport, ImportReport, SkillFiles
    from .onboarding.pick import PickResult

class Library:
    """A skill library: a home (workspace + database) plus read-only roots.

    ``Library(home=PATH, roots=[PATH, ...])`` opens it; ``sync()`` brings the index up to
    date with the files; ``search()`` finds skills."""

    SKILL_TYPES = skillmod.SKILL_TYPES   # the skill types the spec's metadata names
    ROLES = ROLES          # the roles of a team store's tokens, least to most
    AGENT, PERSON, reader_for = AGENT, PERSON, staticmethod(reader_for)   # who a read is for (``access.Reader``)
    Interrupted = indexmod.Interrupted   # Ctrl-C during a sync, after committing the work done
    rebuilt: Any = None    # what ``rebuild`` did with the old database (``onboarding.rebuild.Rebuilt``)
    SORTS = SORTS          # the orders ``browse`` accepts
    PAGE_MAX = PAGE_MAX    # the largest page ``browse`` returns

    def __init__(self, home: str | Path | None = None, roots: builtins.list[str | Path] | None = None, *,
                 config: Config | None = None, embedder: Any = None, client: str | None = None,
                 **overrides: Any):
        if isinstance(embedder, str):  # a backend name is a setting; an instance is used as is
            overrides["embedder"], embedder = embedder, None
        self.config = config or load_config(home, roots=roots or None, **overrides)
        # A saved root that has gone (unmounted, deleted) must not break every command, the
        # fix (`roots remove`) included: it is left out and reported (``missing_roots``,
        # doctor). A root given for this call only must exist (make_roots raises).
        self.missing_roots = self.config.missing_roots()
        gone = {m.path for m in self.missing_roots}
        self.roots: builtins.list[Root] = make_roots(self.config.workspace, [p for p in self.config.roots if p not in gone],
                                            include_clients=self.config.client_roots)
        ensure_home(self.config)
        self.store = Store(self.config.db_path)
        shared = self._shared = open_shared(self.config, self.store)
        self._overlays = shared.overlays
        refs = SkillRefs(self.store)
        self._records = Records(SkillRows(self.store), roots=lambda: self.roots,
                                overlay_of=lambda sid: overlaymod.get(self._overlays, sid),
                                before_read=lambda: self._maybe_sync(), canonical=self.config.canonical_prefixes)
        self._learning = Learning(shared.learning, query=shared.usage.query, embedder=lambda: self.model.state(),
                                  resolve=self._records.get, names=refs.names)
        self._usage = Usage(shared.usage, skills=refs.all, learned=self._learning.changes)
        # late-bound: tests and servers may replace the configuration and the search methods
        self._judge = Judge(config=lambda: self.config.judge, log=shared.judge,
                            search=lambda q, nowait, **kw: (self.search_nowait if nowait else self.search)(q, **kw),
                            descriptions=refs.descriptions)
        self._catalog = Catalog(CatalogReads(self.store), shared.usage_reads, resolve=self._records.get,
                                search=self.search, stats=lambda since=None: self.stats(since=since, reader=PERSON),
                                root_label=self._root_label, rows_by_name=self._rows_by_name,   # (the owner's lists:
                                per_skill_usage=self._usage.skill_usage,          # held skills counted too)
                                list_drafts=lambda: self.review.list(), roots=lambda: self.roots)
        self._resources = SkillResources(active=lambda: self.list(include_inactive=False), by_id=self._records.by_id,
                                         generation=CatalogReads(self.store).generation)
        self._compare = Comparisons(resolve=self._records.get, diff=self.diff, evolver=lambda: self.evolver,
                                    review=lambda: self.review, audit=lambda text: self.supply.audit_text(text),
                                    gate=lambda: self.gate)
        self.client = client
        self.model = LazyEmbedder(lambda: self.config, embedder)
        self.searcher = Searcher(self.store, self.config.search, embedder_provider=self.model.state,
                                 canonical=self.config.canonical_prefixes)
        # what outcomes taught ranking lives with the shared state (the team's, in team mode)
        self.searcher.learner = Learner(self.store, memory=shared.learning)
        # the audit (read with the embedder too), pinned collections, what is held until a person looked (``supply``)
        auditor = Auditor(Audits(self.store, trusts=shared.trusts), opinion=self._judge.opinion, embed=self.model)
        self.supply = SupplyChain(auditor,
                                  Pins(shared.pins or PinnedContent(self.store), exclude=(self.config.home,),
                                       locate=lambda label: next((r.path for r in self.roots if r.label == label), None),
                                       roots=lambda: self.roots),
                                  resolve=self._records.get, records=lambda root: self.list(root=root),
                                  roots=lambda: self.roots, block=lambda: self.config.trust.block)
        self.gate = ReadGate(self.supply.gate, self.supply.pins)   # every read of a skill's text asks it
        self.supply.pins.take_back()    # a database made anew takes back decisions.json before any read
        self.resources = GatedResources(self._resources, self.gate, AGENT)   # skill files for MCP, through the gate
        # collections fetched from git or archives, and skillshelf.lock (``Library.sources``)
        self.sources = Sources(lambda: self.config, roots=lambda: self.roots, sync=self.sync, supply=self.supply,
                               records=lambda root: self.list(root=root), evolver=lambda: self.evolver,
                               review=lambda: self.review, unpack=read_source, locks=shared.sources)
        # each sync audits what it indexes in its own transactions, then checks pinned collections
        self.indexer = Indexer(self.store, self.searcher, self.model, config=lambda: self.config,
                               roots=lambda: self.roots, auditor=self.supply.auditor,
                               after_sync=self.supply.after_sync, vectors=shared.vectors)
        self.evals = library_evals(self.store, shared.team, self.search,
                                   self._records, lambda: self.config, self.model.state, self.supply.hidden_ids)
        # team mode: this server keeps a copy of the team workspace and follows the store's
        # changes (after the indexer: the follower may ask it to index at once)
        self._team = None
        if shared.team is not None:
            from .team import Team

            try:
                # a change from another server: its skill folders alone are indexed (None: all)
                self._team = Team.open(self.config, pg=shared.team, index=self.indexer, sources=self.sources)
                self._team.subscribe("overlay", shared.overlays.refresh)
            except BaseException:
                shared.close()
                raise

    # --- lifecycle ------------------------------------------------------------------
    def close(self, timeout: float | None = None) -> bool:
        """Stop the background indexing and the watches, waiting at most ``timeout`` seconds
        (default ``Indexer.CLOSE_WAIT``) for a sync in progress to stop at its next file or
        batch, then close this thread's database connection. Returns whether the background
        work has ended (a process may then exit with no thread inside the model)."""
        if self._team is not None:       # stop following before the indexer it feeds
            self._team.close()
        ended = self.indexer.close(timeout)
        self._shared.close()
        self.store.close()
        return ended

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def init(cls, home: str | Path | None = None, *, samples: bool = True, **kw: Any) -> "Library":
        """Create the home, database and (once) the three sample skills."""
        from .onboarding.clients import copy_samples

        lib = cls(home, **kw)
        if samples:
            copy_samples(lib.config.workspace, SAMPLES)
            if lib._team is not None:    # the samples join the team store (once: adopt skips known ones)
                lib._team.adopt(list(SAMPLES), author="skillshelf init")
        return lib

    @classmethod
    def rebuild(cls, home: str | Path | None = None, **kw: Any) -> tuple["Library", Path | None]:
        """Index the files into a new database, the old one moved aside (``onboarding.rebuild``): the library and
        where the old file went; ``lib.rebuilt`` says if it was damaged and what usage history was carried over."""
        from .onboarding.rebuild import rebuild

        cfg = kw.pop("config", None) or load_config(home, **{k: v for k, v in kw.items() if k in ("roots",)})
        shown = {k: kw.pop(k, None) for k in ("progress", "embed_progress")}    # the sync's progress callbacks
        lib, done = rebuild(cfg.db_path, lambda: cls(config=cfg, **{k: v for k, v in kw.items() if k != "roots"}),
                            **shown)
        lib.rebuilt = done
        return lib, done.moved

    # --- indexing (``indexing.Indexer``: sync, watch, background indexing) ------------
    def _embedder_state(self):
        """(embedder or None, reason when degraded). Loads the backend on first use."""
        return self.model.state()

    def warm(self, *, sync: bool = True) -> None:
        """Load the embedding model and the search state now (see ``Indexer.warm``)."""
        self.indexer.warm(sync=sync)

    def embedder_status(self) -> dict[str, Any]:
        return self.indexer.embedder_status()

    def sync(self, *, progress=None, embed: bool = True, embed_progress=None) -> indexmod.SyncReport:
        return self.indexer.sync(progress=progress, embed=embed, embed_progress=embed_progress)

    def _maybe_sync(self, *, embed: bool = False) -> None:
        self.indexer.maybe_sync(embed=embed)

    def watch(self, interval: float = RESCAN, *, now: bool = False) -> None:
        self.indexer.watch(interval, now=now)

    def start_indexing(self, interval: float = RESCAN, first_answer: Any = None) -> None:
        self.indexer.start(interval, first_answer)   # (``first_answer``: see ``Indexer.start``)

    def indexing_status(self) -> dict[str, Any]:
        return self.indexer.status()

    def indexing_note(self) -> str | None:
        return self.indexer.note()

    def root_events(self) -> builtins.list[dict]:
        return self.indexer.root_events()

    def writer(self, wait: float | None = None, *, what: str = "this write"):
        return self.indexer.writer(wait, what=what)

    def exclusive(self, wait: float | None = None, *, what: str = "this change"):
        return self.indexer.exclusive(wait, what=what)

    def search_nowait(self, query: str, **kw: Any) -> SearchResult:
        """``search`` for a long-running server: while the writer is busy with an index
        transaction for more than ``WRITE_WAIT`` seconds, the query is answered without being
        logged (no ``query_id``), and ``degraded`` says how far a background indexing is."""
        if self.team:    # the query log is the team store's: the local index writer is not needed
            return self.search(query, **kw)
        with self.indexer.logging_writer() as logged:
            return self.search(query, log=logged and kw.pop("log", True), **kw)

    # --- reading --------------------------------------------------------------------
    def search(self, query: str, *, limit: int = 10, mode: str = "find", repo_scope: str = "all",
               current_repo: str | None = None, tags: builtins.list[str] | str | None = None,
               skill_type: str | None = None, include_inactive: bool = False, include_expired: bool = False,
               log: bool = True, client: str | None = None, for_agents: bool = True, query_vector=None) -> SearchResult:
        """``for_agents`` (the default: what the MCP server and the judge ask): the skills held back from agents
        (``supply.hidden()``) are left out before ranking; a person's search (the CLI, the dashboard:
        ``for_agents=False``) shows them, each hit's ``hidden`` saying why. Every hit carries its ``risk``."""
        self._maybe_sync(embed=True)
        if isinstance(tags, str):
            tags = [t for t in tags.split(",") if t.strip()]
        if repo_scope == "current" and not current_repo:
            current_repo = detect_current_repo()
        # The anti-repeat policy spreads different requests over the collection; a repeat of this
        # request (its text, or its meaning: a paraphrase) is left out, so asking again keeps the answer.
        s = self.config.search
        recent = self._usage.recent_counter(query, s.recency_window, s.recency_same_meaning,
                                            known=self._learning.request_vectors, embedder=self._embedder_state,
                                            remember=self._learning.remember_vector)
        with self._shared.one_read():      # a team store's generations: one statement for the whole search
            result = self.searcher.search(query, limit=limit, mode=mode, repo_scope=repo_scope,
                                          current_repo=current_repo, tags=tags, skill_type=skill_type,
                                          include_inactive=include_inactive, include_expired=include_expired,
                                          recent=recent, worked=self._usage.worked_latest, query_vector=query_vector,
                                          exclude=self.supply.hidden_ids() if for_agents else None)
        self.supply.mark(result.hits, hidden=not for_agents)
        self.indexer.annotate(result)   # (before the log: a request answered from a partial index is not a gap)
        if log:
            filters = {k: v for k, v in dict(repo_scope=repo_scope, current_repo=current_repo, tags=tags,
                                                skill_type=skill_type).items() if v and v != "all"}
            self._usage.log_search(query, result, mode=mode, filters=filters, client=client or self.client,
                                   hash_text=self.config.hash_queries, read_only=self.read_only,
                                   remember=self._learning.remember_vector)
        return result

    def _rows_by_name(self, name: str) -> list:
        return self._records.rows_by_name(name)

    def get(self, name_or_id: str, *, reader: Reader = AGENT) -> SkillRecord:
        """The skill with this id, or the one that wins for this name (see ``catalog.roots``), if the read
        gate gives it to ``reader`` (``supply.gate``). What must see every record resolves in ``catalog``."""
        return self.gate.check(reader, self._records.get(name_or_id))

    # Every read of a skill's text asks the read gate (``supply.gate``) about the record it resolved to; the
    # reader defaults to an agent's, so a path that forgets to say who reads refuses held skills.
    def read(self, name_or_id: str, section: str | None = None, *, reader: Reader = AGENT) -> tuple[SkillRecord, str]:
        """The skill and its body, or only the named section of the body."""
        return self._records.read(name_or_id, section, check=lambda r: self.gate.check(reader, r))

    def read_file(self, name_or_id: str, path: str, *, listed: int = 200,
                  reader: Reader = AGENT) -> tuple[SkillRecord, str]:
        """(the skill, the text of one of the other files it lists): contained, bounded, UTF-8."""
        rec, text = self._records.read_file(name_or_id, path, listed=listed, check=lambda r: self.gate.check(reader, r))
        return rec, self.gate.check_text(reader, rec, path, text)

    # --- skill files as resources (MCP's Skills Extension) -------------------------------
    def resource_page(self, cursor: str | None = None, size: int = 50, *,
                      reader: Reader = AGENT) -> tuple[builtins.list[dict], str | None]:
        """One page of resources (each skill's SKILL.md, then its other files) and the next cursor."""
        return self._resources.resource_page(cursor, size, hidden=self.gate.hidden_for(reader))

    def skill_manifests(self, cursor: str | None = None, size: int = 50, *,
                        reader: Reader = AGENT) -> tuple[builtins.list[dict], str | None]:
        return self.resources.manifests(cursor, size, reader=reader)

    def skill_manifest(self, uri: str, *, reader: Reader = AGENT) -> dict[str, Any]:
        return self.resources.manifest(uri, reader=reader)

    def read_resource(self, uri: str, *, reader: Reader = AGENT) -> tuple[bytes, str]:
        """The bytes of the file a ``skill://`` URI names and its MIME type (contained, bounded)."""
        rec, file, data, mime = self._resources.read(uri, lambda r: self.gate.check(reader, r))
        return self.gate.check_file(reader, rec, file, data), mime

    skill_uri = staticmethod(skill_uri)

    @property
    def read_only(self) -> bool:
        """Whether the index database is open read-only (searches and reads work; no writes)."""
        return self.store.read_only is not None

    def suggest(self, text: str, n: int = 3) -> builtins.list[str]:
        return self._records.suggest(text, n)

    def list(self, *, root: str | None = None, skill_type: str | None = None, tag: str | None = None,
             name_contains: str | None = None, include_inactive: bool = True, invalid_only: bool = False,
             limit: int | None = None) -> Listing:
        """Skills matching every filter given, by name. ``root`` is a root's label or its path;
        an unknown root or skill type is an error naming the valid ones (not an empty list).
        The result's ``matched`` counts every match, also past ``limit``."""
        return self._records.list(root=root, skill_type=skill_type, tag=tag, name_contains=name_contains,
                                  include_inactive=include_inactive, invalid_only=invalid_only, limit=limit)

    def _root_label(self, root: str) -> str:
        return self._records.root_label(root)

    def count(self) -> int:
        return self._records.count()

    def invalid_files(self) -> builtins.list[dict]:
        return self._records.invalid_files()

    def clashes(self) -> builtins.list[Clash]:
        return self._records.clashes()

    # --- validation -----------------------------------------------------------------
    @staticmethod
    def validate_paths(paths: builtins.list[str | Path]) -> builtins.list[tuple[str, builtins.list]]:
        """Findings for each SKILL.md at or under the paths (``skillshelf validate``)."""
        return Comparisons.validate_paths(paths)

    # --- health ---------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        """Every check ``skillshelf doctor`` prints (``doctor.report``)."""
        from .onboarding.doctor import report, store_check

        self._maybe_sync()
        extra = [store_check(self.store_status(), self._team.status() if self._team is not None else None),
                 *self.sources.checks(), self._resources.extension_check(), *self.supply.pins.checks()]
        return report(config=self.config, store=self.store, roots_=self.roots, missing_roots=self.missing_roots,
                      indexed_ids=self._records.rows.ids, invalid_files=self.invalid_files, clashes=self.clashes,
                      embedder_status=self.embedder_status, judge_check=self.judge_check,
                      root_events=self.root_events if self.config.auto_sync else None, extra=extra)
    doctor_without_store = staticmethod(_doctor_without_store)   # (config, error): the team store did not open

    # --- usage ----------------------------------------------------------------------
    def report_outcome(self, skill: str, worked: bool, *, note: str = "", query_id: int | str | None = None,
                       client: str | None = None, reader: Reader = AGENT) -> dict[str, Any]:
        """Record whether a skill worked (append-only); learning keeps it for later requests."""
        rec = self.get(skill, reader=reader)
        return self._usage.report(rec.id, rec.name, worked, note=note, query_id=query_id, client=client or self.client,
                                  learn=self._learning.learn_outcome, version=rec.version)

    def stats(self, *, since: str | None = None, reader: Reader = AGENT) -> usagemod.Stats:
        return self.gate.stats_for(reader, self._usage.stats(since=since, min_uses=self.config.low_success_min_uses,
                                                             low_rate=self.config.low_success_rate))

    def usage_report(self, *, since: str | None = None, fmt: str = "md", reader: Reader = AGENT) -> str:
        if fmt not in ("md", "json"):
            raise ValidationError(f"unknown report format {fmt!r}", fix="use md or json")
        return usagemod.render_report(self.stats(since=since, reader=reader), fmt=fmt)

    def prune_usage(self, before: str) -> int:
        try:
            return self._usage.prune(before)
        except ValueError:
            raise ValidationError(f"{before!r} is not a date", fix="use YYYY-MM-DD") from None

    # --- configuration ----------------------------------------------------------------
    def configured_roots(self) -> builtins.list[str]:
        """Roots saved in config.toml (not the ones from the environment or given for one
        command), including any that no longer exist."""
        from .config import saved_roots

        return [str(p) for p in saved_roots(self.config.home)]

    def add_root(self, path: str | Path) -> builtins.list[str]:
        """Save a read-only root in config.toml so every later command and the server use it."""
        from .config import add_root

        return add_root(self.config.home, path)

    def remove_root(self, path: str | Path) -> builtins.list[str]:
        """Forget a saved root, given by its path (it may no longer exist) or its label."""
        from .config import remove_root

        return remove_root(self.config.home, path, {r.label: str(r.path) for r in self.roots if r.kind == "other"})

    # --- evolution ------------------------------------------------------------------
    @property
    def evolver(self):
        from .evolution.evolve import Evolver

        if getattr(self, "_evolver", None) is None:   # given what it needs (Ports), not the library
            self._evolver = Evolver(self._ports(), **(self._team.evolver_parts() if self._team is not None else {}))
        return self._evolver

    def _ports(self):
        from .evolution.evolve import Ports

        return Ports(get=self._records.get, sync=self.sync, rows_by_name=self._rows_by_name, embedder=self.model.state,
                     searcher=self.searcher, config=self.config, overlays=self._overlays, copies=self._records.copies,
                     may_use=lambda ids, action: self.gate.check_inputs([self._records.get(i) for i in ids], action),
                     findability=self.evals.judge_change, hidden=self.supply.hidden_ids)

    @property
    def review(self):    # the review queue of drafts (``propose`` policy)
        from .evolution.evolve import ReviewQueue

        return ReviewQueue(self.evolver, self._team.drafts if self._team is not None else None)

    def save(self, action: str, *, name: str = "", description: str = "", body: str = "",
             skill_type: str = "", lesson: str = "", repo_name: str = "", tags: str | builtins.list[str] = "",
             reason: str = "", target_skill_name: str = "", source_skill_names: str | builtins.list[str] = "",
             ttl_days: int | None = None, display_name: str = "", author: str = "",
             replace_body: bool = False, by: str = "agent"):
        """ARCHIVE | FIX | DERIVE | MERGE. ``by='agent'`` is subject to the write policy;
        ``by='person'`` (the CLI, the dashboard) writes directly. A FIX keeps the sections its
        body does not resend and adds to Lessons Learned; with ``replace_body`` (a person
        editing the whole text) the body sent replaces the old one as it is."""
        from .errors import PolicyError

        args = dict(action=action, name=name, description=description, body=body, skill_type=skill_type,
                    lesson=lesson, repo_name=repo_name, tags=tags, reason=reason,
                    target_skill_name=target_skill_name, source_skill_names=source_skill_names,
                    ttl_days=ttl_days, display_name=display_name, author=author)
        if replace_body:
            args["replace_body"] = True
        if by == "agent":
            policy = self.config.write_policy
            if policy == "read-only":
                raise PolicyError("this library is read-only for agents: skills cannot be saved",
                                  fix="report outcomes with report_outcome; the owner can allow writes with "
                                      "write_policy = 'propose' or 'open'")
            if policy == "propose":
                return self.review.propose(args)
        return self.evolver.apply(args, trigger=by)

    def history(self, name: str) -> dict[str, Any]:
        """Versions kept and the changelog (a change found on disk is kept as a version first)."""
        return self.evolver.history_of(name)

    def diff(self, name: str, v1: int, v2: int) -> str:
        return self.evolver.diff(name, int(v1), int(v2))

    def rollback(self, name: str, version: int, *, author: str = ""):
        return self.evolver.rollback(name, int(version), author=author)

    def extend_ttl(self, name: str, days: int):
        return self.evolver.extend_ttl(name, int(days))

    def deprecate(self, name: str, reason: str) -> dict[str, Any]:
        return self.evolver.deprecate(name, reason)

    def restore(self, name: str, *, reason: str = "") -> dict[str, Any]:
        """Undo a deprecation: a new version of a workspace skill, or the overlay cleared for a
        skill of a read-only root."""
        return self.evolver.restore(name, reason=reason)

    def delete(self, name: str) -> dict[str, Any]:
        return self.evolver.delete(name)

    # --- browsing and comparisons (the dashboard's views) --------------------------------
    def browse(self, *, root: str | None = None, repo: str | None = None, skill_type: str | None = None,
               tag: str | None = None, status: str = "any", expired: bool | None = None, query: str | None = None,
               sort: str = "name", descending: bool = False, offset: int = 0, limit: int = 50, reader: Reader = AGENT):
        """One page of skills matching every filter (``Catalog.browse``); what is held from ``reader`` left out."""
        return self._catalog.browse(root=root, repo=repo, skill_type=skill_type, tag=tag, status=status,
                                    expired=expired, query=query, sort=sort, descending=descending, offset=offset,
                                    limit=limit, hidden=self.gate.hidden_for(reader))

    def facets(self, *, top_tags: int = 60) -> dict[str, Any]:
        return self._catalog.facets(top_tags=top_tags)

    def overview(self, *, days: int = 30, weeks: int = 12, top: int = 8) -> dict[str, Any]:
        import datetime as _dt

        since = (_dt.date.today() - _dt.timedelta(days=days)).isoformat()
        return self._catalog.overview(days=days, weeks=weeks, top=top, judge=self.judge_stats(since=since))

    def curation(self, *, top: int = 25, drafts: builtins.list[dict] | None = None, since: str | None = None) -> dict[str, Any]:
        return self._catalog.curation(top=top, drafts=drafts, since=since)

    def flywheel(self, *, days: int = 30, weeks: int = 12) -> dict[str, Any]:
        return self._catalog.flywheel(days=days, weeks=weeks)

    def catalog_warm(self) -> None:
        self._catalog.catalog_warm()

    def skill_usage(self, name_or_id: str, *, limit: int = 50) -> dict[str, Any]:
        return self._catalog.skill_usage(name_or_id, limit=limit)

    def copies(self, name_or_id: str, *, reader: Reader = AGENT) -> builtins.list[dict[str, Any]]:
        return self._catalog.copies(name_or_id, hidden=self.gate.hidden_for(reader))

    def lineage(self, name_or_id: str) -> dict[str, Any]:
        return self._catalog.lineage(name_or_id)

    def version_text(self, name_or_id: str, version: int, *, reader: Reader = AGENT) -> str:
        return self._compare.version_text(self.get(name_or_id, reader=reader).id, version)

    def compare(self, name_or_id: str, v1: int, v2: int, *, context: int = DIFF_CONTEXT,
                reader: Reader = AGENT) -> dict[str, Any]:
        return self._compare.compare(self.get(name_or_id, reader=reader).id, v1, v2, context=context)

    def draft_review(self, name: str, *, context: int = DIFF_CONTEXT, reader: Reader = AGENT) -> dict[str, Any]:
        return self._compare.draft_review(name, context=context, reader=reader)

    @staticmethod
    def validate_text(text: str, *, folder_name: str | None = None) -> dict[str, Any]:
        return Comparisons.validate_text(text, folder_name=folder_name)

    def check_save(self, action: str, **args: Any) -> dict[str, Any]:
        return self._compare.check_save(action, **args)

    def skill_text(self, name_or_id: str, *, reader: Reader = AGENT) -> str:
        rec = self.get(name_or_id, reader=reader)
        return self.gate.check_text(reader, rec, Path(rec.path).name, self._compare.skill_text(rec.id))

    # --- onboarding: export, import, pick (archive.py and pick.py, imported when called) ----
    def export_skills(self, names: builtins.list[str] | tuple[str, ...] = (), *, all_skills: bool = False,
                      to: str | Path, include_held: bool = False) -> "ExportReport":
        """Write the named skills (or ``all_skills``: every skill; several of one name, or names
        no folder can have, each in a folder of its own named from the id) to a folder, a
        ``.zip`` or a ``.tar.gz``, with ``manifest.json`` (names, ids, versions, the sha256 of
        every file). The report lists what was left out and why (held skills unless ``include_held``)."""
        from .onboarding.importer import export_skills

        return export_skills(self, list(names), all_skills=all_skills, to=to, include_held=include_held)

    @staticmethod
    def preview_import(source: str | Path, *, config: Config, mode: str = "copy", replace: bool = False) \
            -> "ImportReport":
        """What ``import_skills(..., dry_run=True)`` would report, for a home that may not exist
        yet: compared with an empty library, creating nothing (not even the home)."""
        from .onboarding.importer import preview_import

        return preview_import(config, source, mode=mode, replace=replace)

    def import_skills(self, source: str | Path, *, mode: str = "copy", replace: bool = False,
                      dry_run: bool = False) -> "ImportReport":
        """Import the skills of a folder, ``.zip`` or ``.tar.gz``: ``mode='copy'`` into the
        workspace (a name already taken is skipped unless ``replace``, which makes the
        imported text a new version through FIX), ``mode='root'`` as a read-only root.
        Unsafe archives are refused as a whole before anything is written."""
        from .onboarding.importer import import_skills

        return import_skills(self, source, mode=mode, replace=replace, dry_run=dry_run)

    def pick(self, project: str | Path, *, limit: int = 8) -> "PickResult":
        """The few skills worth installing directly in a client for this project, each with
        the signal or the outcome that chose it."""
        from .onboarding.pick import pick

        return pick(self, project, limit=limit)

    def skill_folder(self, name_or_id: str) -> tuple[Any, "SkillFiles"]:
        """A skill and its files read into memory (``SKILL.md`` and the others), for copying."""
        from .onboarding.importer import skill_files

        rec = self._records.get(name_or_id)
        return rec, skill_files(rec.folder, Path(rec.path).name)

    # --- learning and the model judge ---------------------------------------------------
    def learned(self, name_or_id: str) -> dict[str, Any]:
        """What ranking learned about a skill from outcomes (``skillshelf show``)."""
        return self._learning.learned(name_or_id)

    def forget_learning(self, *, skill: str | None = None, client: str | None = None, before: str | None = None,
                        everything: bool = False) -> int:
        """Undo learning: delete what was learned for a skill, from a client, before a day,
        or everything (``skillshelf usage forget``). Returns the rows deleted."""
        return self._learning.forget(skill=skill, client=client, before=before, everything=everything)

    def judge_configured(self) -> bool:
        """True when a judge backend is set (``judge.backend`` is not ``none``)."""
        return self._judge.configured()

    def judged_search(self, query: str, *, judge: str | bool = "rerank", nowait: bool = False,
                      **search_kwargs: Any) -> SearchResult:
        """``search`` (or ``search_nowait`` with ``nowait``, for servers), then the judge on
        its hits: ``judge`` is rerank | filter | both (True means rerank). The result is a
        ``JudgedResult``; a judge that times out or fails leaves the plain order, flagged.
        ``ConfigError`` when no judge is configured."""
        return self._judge.judged_search(query, judge=judge, nowait=nowait, **search_kwargs)

    def judge_hits(self, res: SearchResult, judge: str = "rerank", *, log: bool = False):
        """Judge an existing result (benches; the MCP and CLI go through ``judged_search``)."""
        return self._judge.judge_hits(res, judge, log=log)

    def judge_stats(self, *, since: str | None = None) -> dict[str, Any]:
        """A summary of the judge log."""
        return self._judge.stats(since=since)

    def judge_check(self) -> Check:
        """The doctor's check of the judge."""
        return self._judge.check()

    # --- agent clients: installing the server and skills in them (clients.py) -------------
    @staticmethod
    def install_client(client: str, scope: str, **kw: Any):
        """Add the skillshelf server to a client's configuration and the teaching skill to its
        skills folder (``clients.install``: config, project, write_policy, skill, dry_run)."""
        from .onboarding.clients import install

        return install(client, scope, **kw)

    @staticmethod
    def uninstall_client(client: str, scope: str, **kw: Any):
        """Remove the skillshelf entry (and the teaching skill it installed) from a client."""
        from .onboarding.clients import uninstall

        return uninstall(client, scope, **kw)

    @staticmethod
    def client_skills_folder(client: str, scope: str, project: Path):
        """(client, its skills folder for ``scope``); an error naming the way out when it has none."""
        from .onboarding.clients import skills_folder

        return skills_folder(client, scope, project)

    def install_skills(self, ids: builtins.list[str], dest: Path):
        """Copy these skills' folders into a client's skills folder (a folder already there is
        left as it is); one ``clients.CopyResult`` per skill."""
        from .onboarding.clients import copy_skill_folders

        return copy_skill_folders(dest, [(rec.name, sf.files, sf.executable)
                                         for rec, sf in (self.skill_folder(sid) for sid in ids)])

    lesson_lines = staticmethod(lesson_lines)   # the lessons a body's Lessons Learned section holds

    @staticmethod
    def quantized_model_ready() -> bool:
        """Whether the bundled model's 8-bit copy has been derived already (it takes seconds, once)."""
        from .embeddings.minilm import MODEL_SHA256
        from .embeddings.quantize import derived_path

        return derived_path(MODEL_SHA256).is_file()

    # --- team mode: the store, tokens and roles ------------------------------------------
    @property
    def team(self) -> bool:
        """Whether this library runs on a team store (``config.store``: a postgresql:// URL)."""
        return self._shared.team is not None

    def _tokens(self):
        if self._shared.tokens is None:
            raise ConfigError("tokens belong to a team store; this library is local",
                              fix="pass --store postgresql://... (or set SKILLSHELF_STORE) to manage a team's tokens")
        return self._shared.tokens

    @staticmethod
    def store_tokens(url: str):
        """A context manager: the tokens of the team store at ``url``, without opening a library
        (``tokens add|list|revoke`` create no home and copy nothing)."""
        from .store.tokens import opened

        return opened(url)

    def add_token(self, name: str, role: str) -> str:
        """A new token for a person or agent, with its role; returned once, stored hashed."""
        return self._tokens().add(name, role)

    def list_tokens(self) -> builtins.list[dict[str, Any]]:
        """Names, roles, created and last used of every token (never a token)."""
        return self._tokens().list()

    def revoke_token(self, name: str) -> None:
        self._tokens().revoke(name)

    def verify_token(self, token: str) -> Caller | None:
        """The caller a bearer token stands for, or None when it is not a valid token."""
        found = self._tokens().verify(token)
        return None if found is None else Caller(*found)

    # raise ForbiddenError naming the role needed unless a caller may do an action (None: a local
    # library's owner, allowed everything)
    authorize = staticmethod(authorize)

    def adopt_folders(self, names: builtins.list[str], *, author: str = "import") -> dict[str, int | None]:
        """Team mode: skill folders written into this server's copy of the workspace (an import)
        join the team store, each as a new skill: {name: its version, or None when the store has
        that name already}. A local library has nothing to do."""
        return self._team.adopt(list(names), author=author) if self._team is not None else {}

    def store_status(self) -> dict[str, Any]:
        """The store this library runs on: ``kind`` (local | team), where (a team URL without
        its password), its schema version, and for a team store whether it answers (in ms)."""
        return _store_status(self.store, self._shared.team)

    # --- team mode: copying a local library into a team store ----------------------------
    def migrate_store(self, url: str, *, dry_run: bool = False, on_kind=None):
        """Copy this (local) library's workspace skills with their versions and changelogs, drafts,
        overlays, pins, trusts, sources, usage logs, learning memory and judge log into the team store
        at ``url`` (``migrate.migrate``); ``dry_run`` only counts. Nothing is copied twice."""
        from .onboarding.migrate import migrate

        return migrate(self.config, self.store, url, dry_run=dry_run, on_kind=on_kind, sources=self.sources.documents)

    @staticmethod
    def upgrade_store(url: str) -> dict[str, Any]:
        """Apply the team store's pending schema migrations (``migrate.upgrade``): the names
        applied and the schema now."""
        from .onboarding.migrate import upgrade

        return upgrade(url)
