"""Storage: every SQL statement of skillshelf lives in this package.

``sqlite`` owns the connection (WAL, busy timeout, read-only fallback) and ``migrations``
the schema as ordered, named steps. The modules beside them are the storage interfaces,
each named by what it stores; services above use those and never write SQL themselves."""

from __future__ import annotations

from .sqlite import Store, damaged, damaged_error, now

__all__ = ["Store", "damaged", "damaged_error", "now"]
