"""A trial index: a change to a skill searched before it lands.

The index is copied into a temporary folder (``store.scratch``), the skill's new text is written
beside it as a one-skill root with the skill's own root label and folder (so its id is the one
it replaces) and indexed into the copy alone, with its vectors. Searches then run the same
pipeline over the copy. The real index, the skill's files and the usage log are not touched;
the folder is removed at the end."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..catalog.eval_files import read_evals
from ..catalog.roots import Root
from ..files import write_file
from ..store.scratch import scratch_copy
from ..usage.evals import Evals
from . import sync as syncmod
from .pipeline import Searcher


class TrialIndex:
    """One open trial: ``search`` (query, k) -> hits; ``replace`` puts a skill's new text in."""

    def __init__(self, folder: Path, searcher: Searcher, config: Any, model: Callable[[], tuple], hidden: Any):
        self.folder = folder
        self.searcher = searcher
        self.config = config
        self._model = model
        self._hidden = hidden

    def search(self, query: str, k: int) -> list:
        return self.searcher.search(query, limit=k, exclude=self._hidden()).hits

    def replace(self, rec: Any, text: str) -> None:
        """Index ``text`` as the SKILL.md of ``rec`` (same root label, same folder) in the copy."""
        rel = rec.id[len(rec.root) + 1:] if rec.id.startswith(f"{rec.root}:") else Path(rec.path).parent.name
        self._index(Root(self.folder / "files" / "_", rec.kind, rec.root), rel, text)

    def add(self, name: str, text: str) -> None:
        """Index ``text`` as a new workspace skill ``name`` in the copy (a DERIVE's child)."""
        self._index(Root(self.folder / "files" / "_", "workspace", "workspace"), name, text)

    def _index(self, root: Root, rel: str, text: str) -> None:
        write_file(root.path / ("" if rel == "." else rel) / "SKILL.md", text)
        syncmod.sync(self.searcher.store, [root], only=[(root, rel)])
        embedder, _ = self._model()
        if embedder is not None:
            syncmod.embed_pending(self.searcher.store, embedder, body_tokens=self.config.search.body_vector_tokens)


class Trial:
    """Opens trial indexes over a library's index: ``store`` (its ``Store``), ``config`` () ->
    the configuration, ``model`` () -> (embedder or None, reason), ``hidden`` () -> the ids held
    back from agents."""

    def __init__(self, store: Any, config: Callable[[], Any], model: Callable[[], tuple], hidden: Callable[[], Any]):
        self.store = store
        self._config = config
        self._model = model
        self._hidden = hidden

    @contextlib.contextmanager
    def open(self) -> Iterator[TrialIndex]:
        folder = Path(tempfile.mkdtemp(prefix="skillshelf-trial-"))
        copy = searcher = None
        try:
            copy = scratch_copy(self.store, folder / "index.db")
            cfg = self._config()
            searcher = Searcher(copy, cfg.search, embedder_provider=self._model, canonical=cfg.canonical_prefixes)
            yield TrialIndex(folder, searcher, cfg, self._model, self._hidden)
        finally:
            if searcher is not None:
                searcher._pool.shutdown(wait=True)    # its query-embedding thread ends with the trial
            if copy is not None:
                copy.close()
            shutil.rmtree(folder, ignore_errors=True)


def library_evals(store: Any, team: Any, search: Callable[..., Any], records: Any,
                  config: Callable[[], Any], model: Callable[[], tuple], hidden: Callable[[], Any]) -> Evals:
    """The facade's ``evals`` service (``Library.evals``): trigger evals through ``search`` (the
    facade's: as an agent's, not logged), each skill's eval files read from its folder (``records``: the
    catalog's), a change judged on a trial index of ``store`` before it lands; ``eval --all``'s
    queries embedded in batches by ``model``'s embedder (``search`` takes each one's vector)."""
    def embed(queries: list[str]) -> Any:
        embedder = model()[0]
        return None if embedder is None else embedder.embed_batch(queries)

    def agents_search(query: str, k: int, vector: Any = None) -> list:
        return search(query, limit=k, log=False, query_vector=vector).hits

    return Evals.on(store, team, search=agents_search, resolve=records.get,
                    every=lambda: records.list(include_inactive=False), copies=records.copies, authored=read_evals,
                    settings=lambda: config().eval, trial=Trial(store, config, model, hidden),
                    policy=lambda: config().evolution.findability, embed=embed, hidden=hidden)
