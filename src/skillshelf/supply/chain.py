"""Skills from strangers are a supply chain: what the library tells its owner about a skill's
instructions (the audit) and about collections that changed under them (pins), and what it
holds back from agents until a person has looked (``trust.block``, held skills).

``SupplyChain`` is the service the facade exposes as ``Library.supply``: every method takes
names or ids as the adapters have them and returns plain values. The rules are in ``audit``,
the per-skill results in ``auditing.Auditor``, pinning in ``pins.Pins`` and the agent gate in
``pins.Gate``."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..catalog.roots import Root, discover
from ..errors import NotFoundError, ValidationError
from . import file_audit as auditmod
from .pins import Gate, Pins
from .skill_audit import Auditor, audit_folder

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
        self._upgraded = False            # skills indexed before audits existed were looked for
        self._hidden: tuple[dict, frozenset[str]] | None = None
        # called with a root's label after a person pinned, unpinned or trusted in it (the
        # sources keep ``skillshelf.lock`` saying what is pinned and what was reviewed)
        self.on_pins: list[Callable[[str], None]] = []

    def _pins_changed(self, label: str) -> None:
        for tell in self.on_pins:
            tell(label)

    # --- the audit ------------------------------------------------------------------------
    def audit(self, refs: Iterable[str] = (), *, root: str | None = None, min_severity: str = "low") \
            -> list[dict[str, Any]]:
        """Findings (``skill, id, file, line, rule, severity, message, excerpt, why``) of the
        named skills (names, ids, paths of skill folders outside the library, or folders that hold
        skill folders at any depth), of a root's skills, or of the whole library; at or above
        ``min_severity``."""
        return self.audit_report(refs, root=root, min_severity=min_severity)["findings"]

    def audit_report(self, refs: Iterable[str] = (), *, root: str | None = None, min_severity: str = "low") \
            -> dict[str, Any]:
        """``audit``'s findings and ``skills``, how many skills were checked. A folder that holds
        no SKILL.md itself is walked as a root is; one with no skill at any depth is refused."""
        if min_severity not in ("low", "medium", "high"):
            raise ValidationError(f"unknown severity {min_severity!r}", fix="use low, medium or high")
        rank = {"low": 0, "medium": 1, "high": 2}
        out: list[dict[str, Any]] = []
        refs = list(refs)
        recs: dict[str, Any] = {}
        outside = 0

        def one(md: Path) -> None:
            nonlocal outside
            try:
                rec = self._resolve(str(md))
                recs[rec.id] = rec
                return
            except NotFoundError:
                pass
            outside += 1
            out.extend(_row(md.parent.name, str(md.parent), f) for f in audit_folder(md)[0]
                       if rank[f.severity] >= rank[min_severity])

        for ref in refs:
            p = Path(ref).expanduser()
            if p.exists() and (p.is_dir() or p.name.lower() == "skill.md"):
                md = p / "SKILL.md" if p.is_dir() else p
                if md.is_file():
                    one(md)
                    continue
                try:
                    rec = self._resolve(str(md))
                    recs[rec.id] = rec
                    continue
                except NotFoundError:
                    pass
                found = discover(Root(p.resolve(), "other", p.name))[0] if p.is_dir() else []
                if not found:
                    raise NotFoundError(f"{p} holds no SKILL.md, at any depth",
                                        fix="pass a skill folder, its SKILL.md, or a folder that holds skill folders")
                for sk in sorted(found, key=lambda x: x.file):
                    one(Path(sk.file))
                continue
            rec = self._resolve(ref)
            recs[rec.id] = rec
        if not refs:
            recs = {r.id: r for r in self._records(root)}
        # what changed on disk since the last sync is audited now (a stat per file, a read of
        # what changed): the report is of the files as they are
        self.auditor.refresh([(r.id, r.path) for r in recs.values() if Path(r.path).exists()])
        names = {r.id: r.name for r in recs.values()}
        for sid, f in self.auditor.findings(list(names), min_severity=min_severity):
            out.append(_row(names.get(sid, sid), sid, f))
        return {"findings": out, "skills": len(recs) + outside}

    def audit_text(self, text: str, *, min_severity: str = "medium") -> list[dict[str, Any]]:
        """The findings (``file, line, rule, severity, message, excerpt``) of a SKILL.md text that
        is not on disk yet (a draft waiting for review), read as the library audits a skill, at or
        above ``min_severity``."""
        found = auditmod.audit_text(text, sentences=self.auditor.sentences)
        return [f.as_dict() for f in found if auditmod.severity_at_least(f.severity, min_severity)]

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

    def hidden_list(self) -> list[dict[str, Any]]:
        """Every skill hidden from agents, by id: ``id, name, root, reasons`` (``changed`` since
        the pin, ``added`` in a pinned root, ``imported`` held, ``blocked`` by the audit), ``why``
        and ``review``, the command that shows what changed and allows it."""
        why = self.gate.hidden()
        if not why:
            return []
        held = self.pins.held()
        blocked = set(self.auditor.blocked(self.gate.block() or "none"))
        rows = []
        for sid in sorted(why):
            try:
                name = self._resolve(sid).name
                ref = name if self._resolve(name).id == sid else sid
            except NotFoundError:
                name, ref = sid.partition(":")[2].rpartition("/")[2] or sid, sid
            reasons = [held[sid]["reason"]] if sid in held else ([] if sid in blocked else ["added"])
            rows.append({"id": sid, "name": name, "root": sid.partition(":")[0],
                         "reasons": reasons + ["blocked"] * (sid in blocked), "why": why[sid],
                         "review": f"skillshelf trust {shlex.quote(ref)}"})
        return rows

    def hidden_ids(self) -> frozenset[str]:
        """The ids of ``hidden()`` as one set, the same object while it is unchanged (a search
        keys its filter on it)."""
        h = self.gate.hidden()
        if self._hidden is None or self._hidden[0] is not h:
            self._hidden = (h, frozenset(h))
        return self._hidden[1]

    def mark(self, hits: list, *, hidden: bool = False) -> None:
        """Set each hit's ``risk`` (one read for all) and, with ``hidden`` (a person's search,
        which shows them), why agents do not see it."""
        if not hits:
            return
        risks = self.risks([h.id for h in hits])
        why = self.gate.hidden() if hidden else {}
        for h in hits:
            h.risk = risks.get(h.id, "none")
            if hidden:
                h.hidden = why.get(h.id)

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
        out = self.gate.allow(rec.id, rec.path if Path(rec.path).exists() else None, note=note)
        if out.get("pinned"):
            self._pins_changed(rec.id.partition(":")[0])
        return out

    def hold_imported(self, ids: dict[str, str]) -> None:
        """Hold skills an import took in from an archive that marked them held (id -> its
        root's label): agents do not see them until a person trusts them here."""
        self.pins.hold_imported(ids)

    def untrust(self, ref: str) -> bool:
        return self.auditor.untrust(self._resolve(ref).id)

    # --- pins -----------------------------------------------------------------------------
    def _root(self, label: str):
        for r in self._roots():
            if r.label == label or str(r.path) == str(Path(label).expanduser().resolve()):
                return r
        known = ", ".join(r.label for r in self._roots())
        raise NotFoundError(f"no root {label!r} in this library", fix=f"use a root's label or path: {known}")

    def pin(self, label: str, *, baseline: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
        """Pin a root: the sha256 of every file of every skill, and each SKILL.md's text; a skill
        whose files change afterwards is held from agents until trusted. ``baseline``: what a
        person reviewed elsewhere, per skill id (``Pins.pin_root``); what differs is held now."""
        root = self._root(label)
        out = self.pins.pin_root(root, baseline=baseline).as_dict()
        if baseline:
            self.pins.refresh()
        self._pins_changed(root.label)
        return out

    def trust_root(self, label: str) -> dict[str, Any]:
        """Accept a pinned root's current content as a whole (re-pins it)."""
        return self.pin(label)

    def unpin(self, label: str, *, record: bool = True) -> bool:
        """Forget a root's pin; ``skillshelf.lock`` follows (``record``: False for a caller that
        writes the lock itself, as removing a source does)."""
        root = self._root(label).label
        done = self.pins.unpin_root(root)
        if record:
            self._pins_changed(root)
        return done

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
    UPGRADE_BATCH = 500

    def after_sync(self, skills: list[tuple[str, str]], removed: Iterable[str] = (), present=None, *,
                   full: bool = False, scoped: bool = False) -> None:
        """After a sync. ``skills`` (id, SKILL.md path): already audited in the sync's
        transactions (only their pins are checked); ``removed``: ids gone from the index;
        ``present``: every skill indexed now. ``full``: the other skills' files are looked at
        too (a stat each, a read of what changed) and pinned collections checked whole.
        A library indexed before audits existed (skills without one) has them all audited
        here once. ``scoped``: a sync of some folders, ``present`` their skills only: those
        are looked at and checked against their pins as a full sync would, the rest is left."""
        removed = list(removed)
        done = {sid for sid, _ in skills}
        for sid in removed:
            self.auditor.forget(sid)          # (a sync without an auditor leaves them)
        if scoped:
            present = list(present or ())
            self.auditor.refresh([(sid, p) for sid, p in present if sid not in done])
            if self.pins.roots():
                for sid, path in {**dict(present), **dict(skills)}.items():
                    self.pins.check(sid, path)
                for sid in removed:
                    self.pins.check(sid, None)
            return
        if present is not None and not self._upgraded:
            self._upgraded = True
            have = self.auditor.audits.audited_ids()
            missing = [(sid, p) for sid, p in present if sid not in have and sid not in done]
            self._audit_all(missing)
            done.update(sid for sid, _ in missing)
        if full and present is not None:
            self.auditor.refresh([(sid, p) for sid, p in present if sid not in done])
        if not self.pins.roots():
            return
        if full and present is not None:
            self.pins.refresh(present)
            return
        for sid, path in skills:
            self.pins.check(sid, path)
        for sid in removed:
            self.pins.check(sid, None)

    def _audit_all(self, skills: list[tuple[str, str]]) -> None:
        store = self.auditor.audits.store
        for i in range(0, len(skills), self.UPGRADE_BATCH):
            with store.tx() as tx:
                for sid, path in skills[i:i + self.UPGRADE_BATCH]:
                    try:
                        self.auditor.audit_skill(sid, path, tx=tx)
                    except OSError:
                        continue          # gone meanwhile: the next sync drops it
