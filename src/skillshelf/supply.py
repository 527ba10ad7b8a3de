"""Skills from strangers are a supply chain: what the library tells its owner about a skill's
instructions (the audit) and about collections that changed under them (pins), and what it
holds back from agents until a person has looked (``trust.block``, held skills).

``SupplyChain`` is the service the facade exposes as ``Library.supply``: every method takes
names or ids as the adapters have them and returns plain values. The rules are in ``audit``,
the per-skill results in ``auditing.Auditor``, pinning in ``pins.Pins`` and the agent gate in
``pins.Gate``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import audit as auditmod
from .auditing import Auditor, audit_folder
from .errors import NotFoundError, ValidationError
from .pins import Gate, Pins

SEVERITIES = auditmod.SEVERITIES


def _row(skill: str, skill_id: str, f: Any) -> dict[str, Any]:
    d = f.as_dict()
    rule = auditmod.RULES.get(d.get("rule") or "")
    return {"skill": skill, "id": skill_id, "file": d.get("file"), "line": d.get("line"), "rule": d.get("rule"),
            "severity": d.get("severity"), "message": d.get("message"), "excerpt": d.get("excerpt"),
            "why": d.get("why") or (rule.why if rule else None)}


class SupplyChain:
    """Given the audit and pin stores' services, ``resolve`` (a name, id or path to a skill
    record), ``records`` (the skills of a root label, or all), ``roots`` (the library's roots
    now) and ``block`` (the ``trust.block`` setting now)."""

    def __init__(self, auditor: Auditor, pins: Pins, *, resolve: Callable[[str], Any],
                 records: Callable[[str | None], list], roots: Callable[[], list], block: Callable[[], str]):
        self.auditor, self.pins = auditor, pins
        self.gate = Gate(auditor, pins, block=block)
        self._resolve, self._records, self._roots = resolve, records, roots

    # --- the audit ------------------------------------------------------------------------
    def audit(self, refs: Iterable[str] = (), *, root: str | None = None, min_severity: str = "low") \
            -> list[dict[str, Any]]:
        """Findings (``skill, id, file, line, rule, severity, message, excerpt, why``) of the
        named skills (names, ids or paths of skill folders outside the library), of a root's
        skills, or of the whole library; at or above ``min_severity``."""
        if min_severity not in ("low", "medium", "high"):
            raise ValidationError(f"unknown severity {min_severity!r}", fix="use low, medium or high")
        rank = {"low": 0, "medium": 1, "high": 2}
        out: list[dict[str, Any]] = []
        refs = list(refs)
        recs = []
        for ref in refs:
            p = Path(ref).expanduser()
            if p.exists() and (p.is_dir() or p.name.lower() == "skill.md"):
                try:
                    recs.append(self._resolve(str(p / "SKILL.md" if p.is_dir() else p)))
                    continue
                except NotFoundError:
                    md = p / "SKILL.md" if p.is_dir() else p
                    if not md.is_file():
                        raise NotFoundError(f"{p} holds no SKILL.md", fix="pass a skill folder or its SKILL.md") \
                            from None
                    findings = audit_folder(md)[0]
                    out += [_row(md.parent.name, str(md.parent), f) for f in findings
                            if rank[f.severity] >= rank[min_severity]]
                    continue
            recs.append(self._resolve(ref))
        if not refs:
            recs = self._records(root)
        if refs:
            self.auditor.refresh([(r.id, r.path) for r in recs])
        names = {r.id: r.name for r in recs}
        for sid, f in self.auditor.findings(list(names), min_severity=min_severity):
            out.append(_row(names.get(sid, sid), sid, f))
        return out

    def audit_of(self, ref: str) -> dict[str, Any] | None:
        """One skill's audit (risk, findings, trusted) for ``show`` and the skill page."""
        rec = self._resolve(ref)
        a = self.auditor.get(rec.id)
        return None if a is None else a.as_dict()

    def risks(self, ids: Iterable[str]) -> dict[str, str]:
        return self.auditor.risks(list(ids))

    def headline(self, ref: str) -> str | None:
        """One line saying what the audit found in a medium- or high-risk skill (None otherwise)."""
        return self.auditor.headline(self._resolve(ref).id)

    def status(self) -> dict[str, Any]:
        """For ``doctor``: skills by risk, how many are held, the pinned roots."""
        return {**self.auditor.counts(), "held": len(self.pins.held()), "pinned": self.pins.roots(),
                "hidden": len(self.gate.hidden())}

    # --- what agents may see --------------------------------------------------------------
    def hidden(self) -> dict[str, str]:
        """Skill id -> why agents do not see it (held, or blocked by ``trust.block``)."""
        return self.gate.hidden()

    def refusal(self, ref: str) -> str | None:
        rec = self._resolve(ref)
        return self.gate.refusal(rec.id, rec.name)

    def review(self, ref: str) -> dict[str, Any]:
        """What a person reads before allowing a skill: its audit now and, for a pinned root,
        the diff against the pin."""
        rec = self._resolve(ref)
        return self.gate.review(rec.id, rec.path if Path(rec.path).exists() else None)

    def trust(self, ref: str, *, note: str = "") -> dict[str, Any]:
        """Allow the skill as it is now: its pin takes this content, the audit's trust is given
        to it (a later change needs a person again)."""
        rec = self._resolve(ref)
        return self.gate.allow(rec.id, rec.path if Path(rec.path).exists() else None, note=note)

    def untrust(self, ref: str) -> bool:
        return self.auditor.untrust(self._resolve(ref).id)

    # --- pins -----------------------------------------------------------------------------
    def _root(self, label: str):
        for r in self._roots():
            if r.label == label or str(r.path) == str(Path(label).expanduser().resolve()):
                return r
        known = ", ".join(r.label for r in self._roots())
        raise NotFoundError(f"no root {label!r} in this library", fix=f"use a root's label or path: {known}")

    def pin(self, label: str) -> dict[str, Any]:
        """Pin a root: the sha256 of every file of every skill, and each SKILL.md's text; a skill
        whose files change afterwards is held from agents until trusted."""
        return self.pins.pin_root(self._root(label)).as_dict()

    def trust_root(self, label: str) -> dict[str, Any]:
        """Accept a pinned root's current content as a whole (re-pins it)."""
        return self.pin(label)

    def unpin(self, label: str) -> bool:
        return self.pins.unpin_root(self._root(label).label)

    def pinned_roots(self) -> list[dict[str, Any]]:
        return self.pins.roots()

    def held(self) -> dict[str, dict[str, str]]:
        """Held skills: id -> why (changed since pinned, or new in a pinned root)."""
        return self.pins.held()

    def held_diff(self, skill_id: str) -> dict[str, Any]:
        """What changed in a held skill: the SKILL.md diff, files added, removed, changed, and
        the new audit findings."""
        try:
            rec = self._resolve(skill_id)
            path = rec.path if Path(rec.path).exists() else None
            sid = rec.id
        except NotFoundError:
            sid, path = skill_id, None
        return self.pins.diff(sid, path).as_dict()

    # --- keeping up with the index --------------------------------------------------------
    def after_sync(self, skills: list[tuple[str, str]], removed: Iterable[str] = ()) -> None:
        """Audit what changed (bundled files too) and check pinned skills; forget removed ones."""
        for sid in removed:
            self.auditor.forget(sid)
        if skills:
            self.auditor.refresh(skills)
            self.pins.refresh(skills)
