"""The catalog: what is on disk and what the library knows of each skill, without search.

Owns the skill roots and their discovery (``roots``: recursive scan, precedence between same-named
skills), the records of one skill (``records``: lookups by id, path or name), a person's browsing
(``browse``: listing with filters, pages, facets), a skill's files as resources (``resources``:
``skill://`` URIs, listing page by page, bounded reads), the owner's decisions on read-only skills
(``overlay``), file-system events under the roots (``watcher``) and a skill's trigger eval files
(``eval_files``: the Agent Skills guide's ``evals/eval_queries.json``, read bounded, a bad file a finding).

May use: the core values and ``store``. Never the search pipeline or any part above it."""
