"""Usage: what agents asked and reported, and what the library learns from it.

Owns the append-only usage log and the curation statistics (``log``: ``Usage``, gaps, never
surfaced, low success) and learning from outcomes (``learning``: bounded, decaying, per-client
capped reordering of what retrieval found) and evals (``evals``: each skill's trigger evals, authored or
learned from worked reports, run through the agents' search; a change judged on them before it lands).

May use: ``store`` and the core values only (search reads learning, never the other way)."""
