"""Skills from strangers are a supply chain: the audit, pins and held skills.

Owns the audit's rule catalogue (``rules``) and patterns (``patterns``), where each rule looks in
one file's bytes (``scan``, with ``invisible`` characters, the model's ``view`` of the text, ``flows``
across lines, the ``commands`` of one logical line and what a skill ``asks`` in words), the readers
that hold in any language (a paragraph's request: ``scopes``; code by what each line can do:
``capabilities``; every hidden place: ``places``; a push to an outside host: ``pushes``; shell in a tool's configuration: ``run_keys``; deletes of the home or the history: ``deletes``; runs and keys read by their shape: ``shapes``; concealment read without words: ``misreport_wordless``), the audit of one file (``file_audit``: ``audit_bytes``, ``risk``),
the audit of a skill's folder kept by content (``skill_audit``: ``Auditor``), pinned roots and the
agent gate (``pins``: ``Pins``, ``Gate``; the home's decisions file kept in step: ``decided``) and the service the facade exposes (``chain``:
``SupplyChain``), and collections fetched from git or archives: fetching (``fetch``), the lock
file (``lock``), a person's edits merged with upstream (``upstream_merge``, ``source_edits``; those
made in a source's own folder kept first: ``kept_edits``; a person's files told from
upstream's: ``person_files``; the temporary folders a change is made in, and an old folder put
back or kept: ``swap``), a restore into a home that has the sources
(``lock_restore``), roots left in another home's ``sources/`` (``home_roots``), a
team's sources kept in the team store and fetched by every server (``shared_sources``) and the
service the facade exposes as ``Library.sources`` (``sources``: ``Sources``).

May use: ``catalog`` (roots), ``store`` and the core values."""
