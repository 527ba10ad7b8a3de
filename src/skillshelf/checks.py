"""What ``doctor`` reports: one ``Check`` per thing it looked at, name clashes, and the
``DoctorReport`` that holds them. Plain values: services build checks, adapters print them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Clash:
    """Skills sharing a name: the one that wins, and the others."""

    name: str
    winner: str
    others: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Check:
    """One finding of ``doctor``."""

    name: str
    status: str      # ok | warn | fail
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DoctorReport:
    checks: list[Check]
    roots: list[dict]
    invalid_files: list[dict]
    clashes: list[Clash]
    embedder: dict

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.as_dict() for c in self.checks], "roots": self.roots,
                "invalid_files": self.invalid_files, "clashes": [c.as_dict() for c in self.clashes],
                "embedder": self.embedder}
