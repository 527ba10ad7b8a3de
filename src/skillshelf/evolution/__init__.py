"""Evolution: how a skill changes, and every version it had.

Owns ARCHIVE / FIX / DERIVE / MERGE, lineage, rollback and TTL (``evolve``), deprecate, restore,
extend-ttl and delete, by id one skill and by name every copy (``lifecycle``), the values a change
is made of (``changes``), what a write accepts (``guards``), a change written over the file's own
frontmatter, only the keys it sets (``frontmatter``), a body's sections and lessons
(``lessons``), the commit point of a workspace change (``commit``), every version in full and
the changelog (``history``), the review queue of the ``propose`` policy (``review``) and the
side-by-side comparisons a person reviews (``comparisons``).

May use: ``search`` (a change reindexes its skill), ``catalog``, ``store`` and the core values."""
