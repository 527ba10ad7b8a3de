"""Servers of one team store for the tests: a ``Library`` with its own home on one
PostgreSQL database, built the way the facade builds team mode (``Team.open``, the Evolver's
parts, the review queue's drafts)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from skillshelf import Library
from skillshelf.config import load as load_config
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.evolve import Evolver, ReviewQueue
from skillshelf.team import Team, team_paths


def team_config(cfg):
    """``cfg`` whose workspace and drafts are the server's copies of the team's
    (``<home>/team/workspace`` and ``<home>/team/drafts``) where ``config.py`` does not say so
    yet for a configuration with a store."""
    paths = team_paths(cfg.home)
    if cfg.workspace == paths["workspace"]:
        return cfg

    class TeamConfig(type(cfg)):
        workspace = property(lambda self: team_paths(self.home)["workspace"])
        drafts = property(lambda self: team_paths(self.home)["drafts"])

    return TeamConfig(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})


def team_library(home: Path, url: str, *, follow: bool = True, embedder: str = "fake", **settings) -> Library:
    """A server of the team store ``url`` with its home in ``home``; ``embedder``: "fake" (the
    tests' deterministic one) or a backend's name."""
    settings.setdefault("write_policy", "open")
    settings.setdefault("auto_sync", False)
    fake = embedder == "fake"
    cfg = team_config(load_config(home, store=url, embedder="none" if fake else embedder, **settings))
    lib = Library(config=cfg, embedder=FakeEmbedder() if fake else None)
    # -- the facade's lines (Library.__init__, evolver, review, close) --
    lib._team = Team.open(lib.config, pg=lib._shared.team, index=lambda paths: lib.indexer.sync(embed=True),
                          follow=follow)
    lib._team.subscribe("overlay", lib._overlays.refresh)
    lib._evolver = Evolver(lib, overlays=lib._overlays, **lib._team.evolver_parts())
    lib.sync()
    return lib


def review(lib: Library) -> ReviewQueue:
    return ReviewQueue(lib.evolver, lib._team.drafts)


def close(lib: Library) -> None:
    lib._team.close()
    lib.close()
