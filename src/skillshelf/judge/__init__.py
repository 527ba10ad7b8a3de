"""The optional model judge: a second opinion on the shortlist search already made.

Owns the rerank service (``rerank``), its backends (``backends``: a chat model over HTTP, the
local cross-check) and its words (``prompts``: skill text fenced as data, output validated
against the real candidates), and the audit's optional second opinion (``audit_opinion``: off unless
``judge.audit`` is set; it can add a finding to a skill's audit, never remove one).

May use: ``search``, ``embeddings``, ``store`` and the core values."""
