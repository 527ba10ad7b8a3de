"""The lifecycle of a skill: ``extend-ttl``, ``deprecate``, ``restore`` and ``delete``.

By id (or path) each acts on that one skill. By name it means the skill, whatever copies of
it the library holds (the same name key: the copies a search shows as one hit, ``×N``):

- ``deprecate`` takes every copy out of search, and says how many: a copy left active would
  still be offered under the name the owner just retired.
- ``restore`` brings back every deprecated copy, and says how many (the undo of the above).
- ``extend-ttl`` pushes the expiry of every copy that expires. A name whose copies never
  expire is refused, listing their ids: a name must not give an expiry to a copy that had none.
- ``delete`` is refused when the name has several copies, listing their ids: it removes a
  folder and its history, so it names exactly one skill.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog import overlay as overlaymod
from ..errors import SkillshelfError, ValidationError
from ..files import contained
from .guards import MAX_REASON_CHARS, check_text

INACTIVE = ("inactive", "deprecated", "merged")   # statuses that keep a skill out of search
IDS_SHOWN = 12                                     # ids listed in a message about copies


def _listed(recs: list[Any]) -> str:
    ids = [r.id for r in recs]
    more = len(ids) - IDS_SHOWN
    return ", ".join(ids[:IDS_SHOWN]) + (f" and {more} more" if more > 0 else "")


class Lifecycle:
    """The lifecycle operations of an :class:`~.evolve.Evolver` (its lookups, locks and writes:
    typed ``Any`` here, since the evolver holds this object and an import back would be a circle)."""

    def __init__(self, ev: Any):
        self.ev = ev

    # which skills a reference means ------------------------------------------------------------
    def targets(self, ref: str) -> list[Any]:
        """The skills ``ref`` means: the one skill of an id or a path; every copy of a name,
        in lookup precedence (the one a lookup by name returns first)."""
        rec = self.ev._get(ref)
        key = ref.strip() if isinstance(ref, str) else ref
        if key == rec.id or str(Path(key).expanduser().absolute()) == rec.path:
            return [rec]
        ports = self.ev.ports
        rows = ports.copies(rec.name) if ports.copies is not None else ports.rows_by_name(rec.name)
        recs = [rec]
        for row in rows:
            if row["id"] != rec.id:
                try:
                    recs.append(ports.get(row["id"]))
                except SkillshelfError:
                    continue        # gone since the rows were read
        return recs

    def one(self, ref: str, verb: str) -> Any:
        """The one skill ``ref`` means; a name with several copies is refused, listing their ids."""
        recs = self.targets(ref)
        if len(recs) > 1:
            raise ValidationError(f"{ref} names {len(recs)} skills: {_listed(recs)}",
                                  fix=f"{verb} one of them by its id, e.g. `skillshelf {verb} {recs[0].id}`")
        return recs[0]

    def _each(self, recs: list[Any], one) -> tuple[list[dict], list[str]]:
        """``one`` on every skill: the results, and what refused (the first error is raised
        when none was done)."""
        done: list[dict] = []
        failed: list[tuple[Any, SkillshelfError]] = []
        for rec in recs:
            try:
                done.append(one(rec))
            except SkillshelfError as exc:
                failed.append((rec, exc))
        if not done and failed:
            raise failed[0][1]
        return done, [f"{rec.id} was left as it is: {exc.message}" for rec, exc in failed]

    @staticmethod
    def _many(name: str, done: list[dict], notes: list[str], said: str, tail: str = "", **extra: Any) -> dict:
        """One skill's result as it is; for several, one message naming how many and which."""
        if len(done) == 1 and not notes:
            return done[0]
        ids = [d["id"] for d in done]
        msg = f"{name} {said}: {len(done)} cop{'y' if len(done) == 1 else 'ies'} ({', '.join(ids)}){tail}"
        return {"name": name, "id": ids[0], "ids": ids, "copies": len(done), "results": done,
                "message": msg + "".join(f"; {n}" for n in notes), **extra}

    # the operations -----------------------------------------------------------------------------
    def extend_ttl(self, name: str, days: int) -> dict:
        """Push the expiry DAYS further: from the current expiry, or from today when there is
        none or it has passed. What is printed is what is stored. By name: every copy that
        expires (see the module's docstring)."""
        if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= skillmod.MAX_TTL_DAYS:
            raise ValidationError(f"days must be a number from 1 to {skillmod.MAX_TTL_DAYS:,}",
                                  fix="e.g. skillshelf extend-ttl NAME 90")
        recs = self.targets(name)
        if len(recs) > 1:
            expiring = [r for r in recs if r.expires_on]
            if not expiring:
                raise ValidationError(f"{name} names {len(recs)} skills and none of them expires: {_listed(recs)}",
                                      fix=f"give one of them an expiry by its id, e.g. "
                                          f"`skillshelf extend-ttl {recs[0].id} {days}`")
            recs = expiring
        done, notes = self._each(recs, lambda rec: self._extend_one(rec, days))
        return self._many(recs[0].name, done, notes, f"now expires {days} days later",
                          expires_on=max(d["expires_on"] for d in done))

    def _extend_one(self, rec: Any, days: int) -> dict:
        ev = self.ev
        today_d = _dt.date.today()
        current = skillmod.parse_date(rec.expires_on)
        new_exp = max(current or today_d, today_d) + _dt.timedelta(days=days)
        if rec.kind != "workspace":
            ov = overlaymod.set_state(ev.overlays, rec.id, expires_on=new_exp.isoformat())
            return {"name": rec.name, "id": rec.id, "expires_on": ov.expires_on,
                    "message": f"{rec.name} now expires on {ov.expires_on} (kept in the library; "
                               f"the read-only file in {rec.root} is untouched)"}
        # a FIX sets last-modified to today, from which ttl-days counts
        ttl = (new_exp - today_d).days
        res = ev.apply({"action": "FIX", "target_skill_name": rec.id, "ttl_days": ttl,
                        "reason": f"TTL extended by {days} days (expires {new_exp.isoformat()})"},
                       trigger="person")
        return {"name": res.name, "id": rec.id, "expires_on": new_exp.isoformat(), "version": res.version,
                "message": f"{res.name} now expires on {new_exp.isoformat()} (v{res.version})"}

    def deprecate(self, name: str, reason: str) -> dict:
        """Take a skill out of search (kept on disk). By name: every active copy (every copy
        when none is active, which updates the reason)."""
        reason = check_text(reason, "the reason", max_chars=MAX_REASON_CHARS).strip()
        if not reason:
            raise ValidationError("a reason is required to deprecate a skill", fix="pass --reason '...'")
        recs = self.targets(name)
        recs = [r for r in recs if r.active] or recs
        done, notes = self._each(recs, lambda rec: self._deprecate_one(rec, reason))
        return self._many(recs[0].name, done, notes, "is deprecated", f"; {reason}", status="deprecated",
                          reason=reason)

    def _deprecate_one(self, rec: Any, reason: str) -> dict:
        ev = self.ev
        if rec.kind != "workspace":
            ev._set_status(rec, "inactive", {}, trigger="person", reason=reason)
            return {"name": rec.name, "id": rec.id, "status": "deprecated", "reason": reason,
                    "message": f"{rec.name} is deprecated: {reason} (kept in the library; the read-only file "
                               f"in {rec.root} is untouched)"}
        with ev._locked_record(rec.id) as locked:
            ev._set_status(locked, "inactive", {}, trigger="person", reason=reason)
        ev._after_write(lambda: ev.ports.sync(embed=False))
        return {"name": locked.name, "id": locked.id, "status": "inactive", "reason": reason,
                "message": f"{locked.name} is deprecated: {reason}"}

    def restore(self, name: str, *, reason: str = "") -> dict:
        """Undo a deprecation (or a merge's retirement): the skill is active again. A
        workspace skill gets a new version without its status; for a skill of a read-only
        root the deprecation kept in the library is cleared (its file is never changed).
        By name: every deprecated copy. Of the active skill a MERGE made, while the sources it
        retired are still retired: the whole merge is undone (``_undo_merge``)."""
        reason = check_text(reason, "the reason", max_chars=MAX_REASON_CHARS).strip()
        recs = self.targets(name)
        undone = self._undo_merge(recs[0], reason) if len(recs) == 1 else None
        if undone is not None:
            return undone
        if len(recs) > 1:
            recs = [r for r in recs if self._restorable(r)] or recs[:1]
        done, notes = self._each(recs, lambda rec: self._restore_one(rec, reason))
        return self._many(recs[0].name, done, notes, "is active again", status="active", reason=reason)

    def _merged_away(self, rec: Any) -> list[Any]:
        """The sources the active skill ``rec`` retired when it was merged from them, still retired."""
        if not rec.active or not rec.metadata.get("merged-from"):
            return []
        out = []
        for name in str(rec.metadata["merged-from"]).split(","):
            if not name.strip() or name.strip() == rec.name:
                continue
            try:
                src = self.ev.ports.get(name.strip())
            except SkillshelfError:
                continue            # deleted since
            into = (src.metadata.get("merged-into") if src.kind == "workspace"
                    else str((getattr(src, "overlay", None) or {}).get("reason") or "").removeprefix("merged into "))
            if not src.active and into == rec.name:
                out.append(src)
        return out

    def _undo_merge(self, rec: Any, reason: str) -> dict | None:
        """``restore`` of a skill a MERGE made, while the sources it retired are still retired:
        the merge is undone in one step. Each source is active again; a skill the merge created
        is deprecated; a source merged into keeps the merged text, and the message names the
        rollback that brings back its text of before."""
        sources = self._merged_away(rec)
        if not sources:
            return None
        why = reason or f"the merge into {rec.name} was undone"
        done, notes = self._each(sources, lambda src: self._restore_one(src, why))
        names = ", ".join(d["name"] for d in done)
        merged_from = [n.strip() for n in str(rec.metadata.get("merged-from")).split(",")]
        if rec.name in merged_from:
            before = [e.from_version for e in self.ev.history.changelog(rec.name)
                      if e.action == "MERGE" and e.from_version]
            tail = (f"; {rec.name} keeps the merged text: `skillshelf rollback {rec.name} {before[-1]}` brings back "
                    f"its text of before the merge" if before else f"; {rec.name} keeps the merged text")
        else:
            self.deprecate(rec.id, f"merge undone: {names} are active again")
            tail = f"; {rec.name} is deprecated (`skillshelf restore {rec.id}` brings it back)"
        return {"name": rec.name, "id": rec.id, "status": "merge undone", "restored": done,
                "message": f"the merge into {rec.name} is undone: {names} {'is' if len(done) == 1 else 'are'} active again{tail}"
                           + "".join(f"; {n}" for n in notes)}

    @staticmethod
    def _restorable(rec: Any) -> bool:
        if rec.kind != "workspace":
            return (getattr(rec, "overlay", None) or {}).get("status") == "deprecated"
        return (rec.metadata.get("status") or "active").lower() in INACTIVE

    def _restore_one(self, rec: Any, reason: str) -> dict:
        ev = self.ev
        if rec.kind != "workspace":
            ov = getattr(rec, "overlay", None) or {}
            if ov.get("status") != "deprecated":
                if (rec.metadata.get("status") or "active").lower() in INACTIVE:
                    raise ValidationError(f"{rec.name} is marked inactive by its own file in the read-only root "
                                          f"{rec.root}, not by a deprecation kept here",
                                          fix=f"FIX it to make a workspace copy you can change "
                                              f"(`skillshelf fix {rec.id} ...`), or change it in {rec.root}")
                raise ValidationError(f"{rec.name} is not deprecated: there is nothing to restore",
                                      fix="deprecated skills show as (inactive) in `skillshelf list`")
            overlaymod.set_state(ev.overlays, rec.id, status=None, reason=None)
            return {"name": rec.name, "id": rec.id, "status": "active", "reason": reason,
                    "message": f"{rec.name} is active again (the deprecation kept in the library is cleared; "
                               f"the read-only file in {rec.root} is untouched)"}
        with ev._locked_record(rec.id) as locked:
            ev._capture(locked)
            cur = skillmod.parse_strict(ev._read(locked.path), folder_name=Path(locked.path).parent.name,
                                        path=locked.path)
            if (cur.metadata.get("status") or "active").lower() not in INACTIVE:
                raise ValidationError(f"{locked.name} is not deprecated: there is nothing to restore",
                                      fix="deprecated skills show as (inactive) in `skillshelf list`")
            version = ev._write_metadata(locked, {"status": None, "status-reason": None, "merged-into": None},
                                         action="RESTORE", trigger="person", reason=reason or "restored")
        ev._after_write(lambda: ev.ports.sync(embed=False))
        return {"name": locked.name, "id": locked.id, "status": "active", "reason": reason, "version": version,
                "message": f"{locked.name} is active again (v{version})"}

    def delete(self, name: str) -> dict:
        """Delete a workspace skill's folder and history. A name with several copies is
        refused (see the module's docstring)."""
        ev = self.ev
        rec = self.one(name, "delete")
        if rec.kind != "workspace":
            raise ValidationError(f"{rec.name} lives in the read-only root {rec.root}",
                                  fix=f"delete it there by hand, or hide it with `skillshelf deprecate {rec.id} "
                                      "--reason ...` (kept in the library, the file is untouched)")
        with ev._locked_record(rec.id) as locked:
            # never the workspace itself, never outside it
            folder = contained(ev.cfg.workspace, Path(locked.path).parent)
            forget = bool(skillmod.NAME_RE.match(locked.name)) and not ev.ports.rows_by_name(locked.name)[1:]
            ev.ws.delete(locked.name, folder, forget=forget)
        ev._after_write(lambda: ev.ports.sync(embed=False))
        return {"name": locked.name, "id": locked.id, "deleted": str(folder)}
