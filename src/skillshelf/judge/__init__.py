"""The optional model judge: a second opinion on the shortlist search already made.

Owns the rerank service (``rerank``), its backends (``backends``: a chat model over HTTP, the
local cross-check) and its words (``prompts``: skill text fenced as data, output validated
against the real candidates).

May use: ``search``, ``embeddings``, ``store`` and the core values."""
