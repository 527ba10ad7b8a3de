"""Onboarding: getting skills and clients in and out of a library.

Owns agent clients and their config files (``clients``, ``configtext``, ``client_files``),
``pick`` (the few skills worth installing in a client), export and import of folders and
archives (``export``, ``importer``, ``unpack``), copying a local library into a team store
(``migrate``), ``doctor`` and ``rebuild`` (a new index, the old one's usage history carried over).

May use: ``evolution``, ``search``, ``catalog``, ``store`` and the core values."""
