"""Search: files into the index, and a request into a short list of hits.

Owns the sync of files to the store by content hash (``sync``; the model's work beside it,
``prefetch``), the service that keeps the index and answers queries (``indexer``; what a search answered
during an indexing, this process's or another's, is missing: ``progress``), the lexical
index (``lexical``: BM25F over postings in SQLite) and the dense one (``vectors``), the in-memory
state between queries (``state``), the query pipeline (``pipeline``: lexical ∥ dense → fuse →
fitted ranker → diversify → confidence), the fusion and recency steps (``fusion``), the fitted
ranker and its weights (``ranker``, ``ranker.json``), whether a hit is likely (``confidence``),
the hits themselves and which copy of a group each shows (``hits``, ``language``), and a trial
index: a change searched on a copy of the index before it lands (``trial``, which also composes
the ``usage.evals`` service).

May use: ``catalog``, ``usage`` (learning reorders what retrieval found), ``embeddings``,
``store`` and the core values."""
