"""The team's sources and their lock in the team store (``protocols.SourceLockStore``); a local
library keeps them in ``skillshelf.lock`` in its home, and a team server exports this there.

One row per source holds its part of the lock as one TOML document (what ``lock.render`` writes
for it alone, lock-version and all), not one row per file: the store never asks for a single
file, a server always needs a source's whole entry to fetch and verify it, and the lock's
format stays defined in one place (``supply.lock``), readable the same in the store as in the
file. ``commit_id`` is kept beside it for a person reading the table.

A change is a compare-and-set: ``replace`` is given the documents the caller read (``expect``)
and refuses (``ConflictError``) when another server changed one of the sources it changes
since. Each changed source records a change of kind ``source`` (key: its label) in the same
transaction, so every server learns it from the change stream."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ..errors import ConflictError
from .pg_writes import call, clean, write

_COMMIT = re.compile(r'^commit = "([^"]*)"$', re.MULTILINE)
# a transaction-level advisory lock around a change of the sources (the two-int key space)
_LOCK = (7402212, 8)


def digest(document: str) -> str:
    return hashlib.sha256(document.encode("utf-8")).hexdigest()


def changed_labels(documents: dict[str, str], expect: dict[str, str]) -> list[str]:
    """The labels whose document ``documents`` adds, changes or drops, compared with ``expect``."""
    return sorted(lb for lb in set(documents) | set(expect) if documents.get(lb) != expect.get(lb))


def stale(current: dict[str, str], expect: dict[str, str], labels: list[str]) -> list[str]:
    """The labels of ``labels`` whose document (by digest) is no longer what the caller read."""
    return [lb for lb in labels if current.get(lb) != (digest(expect[lb]) if lb in expect else None)]


def conflict(labels: list[str]) -> ConflictError:
    return ConflictError(f"the source{'s' * (len(labels) != 1)} {', '.join(labels)} changed while this change "
                         "was being made (another curator, or another server)",
                         fix="look at `skillshelf sources list` and run the command again")


class PgSourceLocks:
    """The team's sources, in the team store ``pg`` (``store.postgres.PgStore``). Refusals and
    lost connections raise ``StoreError``."""

    def __init__(self, pg: Any):
        self.pg = pg

    def documents(self) -> dict[str, str]:
        """Each source's part of the lock, by label."""
        with call(self.pg) as conn:
            return dict(conn.execute("SELECT label, document FROM sources ORDER BY label").fetchall())

    def replace(self, documents: dict[str, str], *, expect: dict[str, str], by: str) -> list[str]:
        """Make the team's sources ``documents`` (label -> document), provided each source this
        changes is still as ``expect`` (the documents read before) has it; the labels changed."""
        labels = changed_labels(documents, expect)
        if not labels:
            return []
        with write(self.pg) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", _LOCK)
            current = dict(conn.execute("SELECT label, digest FROM sources WHERE label = ANY(%s)",
                                        ([clean(lb) for lb in labels],)).fetchall())
            bad = stale(current, expect, labels)
            if bad:
                raise conflict(bad)
            for lb in labels:
                doc = documents.get(lb)
                if doc is None:
                    conn.execute("DELETE FROM sources WHERE label = %s", (clean(lb),))
                else:
                    m = _COMMIT.search(doc)
                    conn.execute("INSERT INTO sources (label, commit_id, document, digest, updated_by)"
                                 " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (label) DO UPDATE"
                                 " SET commit_id = excluded.commit_id, document = excluded.document,"
                                 " digest = excluded.digest, updated_at = now(), updated_by = excluded.updated_by",
                                 (clean(lb), clean(m.group(1) if m else ""), clean(doc), digest(doc), clean(by)))
                self.pg.record_change(conn, "source", clean(lb))
        return labels
