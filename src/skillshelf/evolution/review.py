"""The review queue: changes agents proposed under the ``propose`` policy, kept apart from
live skills until a person approves (the change is applied) or rejects them (the reason
is logged).

:class:`Drafts` is what the queue needs from wherever drafts are kept; :class:`FileDrafts`
keeps one folder per draft in ``<home>/drafts/<name>/`` (``SKILL.md`` as it would be
written, ``draft.json`` with the change asked for) and ``rejected.jsonl`` beside them. A
shared team store keeps them in its database behind the same methods.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import ConflictError, NotFoundError, SkillshelfError, ValidationError
from ..files import MAX_SKILL_BYTES, append_line, locked, read_text_bounded, write_file
from .changes import SaveResult
from .draft_merge import META_KEYS, Rebased, rebase
from .frontmatter import planned_text
from .guards import check_text, name_dir, now_iso

MAX_REASON_CHARS = 1_000
# what a FIX may change besides its lesson: one that changes any of these is not added to a waiting draft
_CHANGES = ("body", "description", "tags", "skill_type", "repo_name", "ttl_days", "display_name", "replace_body",
            "upstream_keys", "follow_origin", "origin_gone")


def _now(base: Any, now: Any) -> str:
    return f"it is at v{now} now" if now != base else f"edited since, still v{now}"


class Drafts:
    """Where drafts are kept, one per skill name. ``record`` is what was asked (a dict with
    ``args``, the change, and ``proposed_at``); ``text`` the SKILL.md it would write.
    Writes that fail raise ``WriteError`` or ``StoreError`` and keep what was there."""

    def lock(self, name: str) -> contextlib.AbstractContextManager:
        """Held while a draft of ``name`` is read and then written or removed."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """The names drafts are kept under, sorted (a draft may still be unreadable)."""
        raise NotImplementedError

    def record(self, name: str) -> dict | None:
        """The draft's record, or None when there is no readable draft of ``name``."""
        raise NotImplementedError

    def text(self, name: str) -> str:
        raise NotImplementedError

    def location(self, name: str) -> str:
        """Where a person finds the draft's text."""
        raise NotImplementedError

    def put(self, name: str, text: str, record: dict) -> None:
        raise NotImplementedError

    def remove(self, name: str) -> None:
        raise NotImplementedError

    def log_rejection(self, record: dict) -> None:
        raise NotImplementedError


class FileDrafts(Drafts):
    """``<home>/drafts/<name>/`` per draft (a plain spec name: see :func:`name_dir`)."""

    def __init__(self, base: Path, home: Path):
        self.base = Path(base)
        self.home = Path(home)

    def lock(self, name: str):
        return locked(self.home, "draft:" + name)

    def _folder(self, name: str) -> Path | None:
        try:
            return name_dir(self.base, name)
        except ValidationError:
            return None

    def names(self) -> list[str]:
        if not self.base.is_dir():
            return []
        return sorted(d.name for d in self.base.iterdir() if skillmod.NAME_RE.match(d.name) and d.is_dir())

    def record(self, name: str) -> dict | None:
        folder = self._folder(name)
        if folder is None:
            return None
        try:
            data = json.loads(read_text_bounded(folder / "draft.json", MAX_SKILL_BYTES * 2))
        except (OSError, ValueError, SkillshelfError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("args"), dict) else None

    def text(self, name: str) -> str:
        return read_text_bounded(name_dir(self.base, name) / "SKILL.md", MAX_SKILL_BYTES)

    def location(self, name: str) -> str:
        return str(name_dir(self.base, name) / "SKILL.md")

    def put(self, name: str, text: str, record: dict) -> None:
        folder = name_dir(self.base, name)
        write_file(folder / "SKILL.md", text)
        write_file(folder / "draft.json", json.dumps(record, indent=2))

    def remove(self, name: str) -> None:
        folder = self._folder(name)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def log_rejection(self, record: dict) -> None:
        append_line(self.base / "rejected.jsonl", json.dumps(record))


class ReviewQueue:
    """Drafts written under the ``propose`` policy. ``evolver`` plans a change (``plan``,
    which checks it) and applies it (``apply``); ``drafts`` keeps them (files in
    ``<home>/drafts/`` by default)."""

    def __init__(self, evolver: Any, drafts: Drafts | None = None):
        self.ev = evolver
        self.drafts = drafts or FileDrafts(evolver.cfg.drafts, evolver.cfg.home)

    def propose(self, args: dict[str, Any]) -> SaveResult:
        plan = self.ev.plan(args)           # validates now: a bad draft is refused at once
        with self.drafts.lock(plan.name):
            waiting = self.drafts.record(plan.name)
            if waiting is not None:
                return self._add_to(plan.name, waiting, args)
            text = planned_text(plan.action, plan.previous_text, plan.skill)   # as a FIX would write it
            found = self.ev.findability(plan)    # the reviewer sees what the change does to its evals
            self.drafts.put(plan.name, text, {"args": args, "proposed_at": now_iso(), "findability": found,
                                              **({"base_version": plan.from_version} if plan.from_version else {})})
        return SaveResult("draft", plan.action, plan.name, plan.skill.version, self.drafts.location(plan.name),
                          None, message=f"draft saved for review: a person approves it with "
                                        f"`skillshelf review approve {plan.name}`"
                                        + (f"; {found['warning'] or found['line']}" if found else ""),
                          findability=found)

    def _add_to(self, name: str, data: dict, args: dict[str, Any]) -> SaveResult:
        """A FIX that brings only a lesson, while a FIX of the same skill waits: the lesson is added
        to that draft as a part of its own (who sent it, why, when), so no agent's lesson is lost
        and the reviewer sees each. Any other change while a draft waits is refused, saying how
        to send it. Called with the draft's lock held."""
        first = data["args"]
        action = str(args.get("action") or "").strip().upper()
        lesson = str(args.get("lesson") or "").strip()
        only_lesson = action == "FIX" and lesson and not any(args.get(k) for k in _CHANGES)
        waiting = str(first.get("action") or "").strip().upper()
        if waiting != "FIX":
            raise ConflictError(f"a {waiting} draft for {name!r} is already waiting for review",
                                fix="send this change again once a person has approved or rejected that draft")
        if not only_lesson:
            raise ConflictError(f"a draft for {name!r} is already waiting for review, and this {action} changes "
                                "more than a lesson",
                                fix="send what you learned as a FIX with only a `lesson`: it is added to the waiting "
                                    "draft; any other change can be sent once a person has reviewed that draft")
        part = {"lesson": lesson, "author": str(args.get("author") or ""), "reason": str(args.get("reason") or ""),
                "proposed_at": now_iso()}
        combined = {**first, "parts": [*(first.get("parts") or []), part]}
        plan = self.ev.plan(combined)
        text = planned_text(plan.action, plan.previous_text, plan.skill)
        if text == self.drafts.text(name):
            return SaveResult("draft", plan.action, name, plan.skill.version, self.drafts.location(name), None,
                              message=f"the draft for {name} waiting for review already holds this lesson")
        found = self.ev.findability(plan)
        self.drafts.put(name, text, {**data, "args": combined, "findability": found})
        n = 1 + len(combined["parts"])
        return SaveResult("draft", plan.action, name, plan.skill.version, self.drafts.location(name), None,
                          message=f"lesson added to the draft for {name} already waiting for review ({n} changes in "
                                  f"it now, each with its author): a person approves it with "
                                  f"`skillshelf review approve {name}`"
                                  + (f"; {found['warning'] or found['line']}" if found else ""),
                          findability=found)

    @staticmethod
    def authors(args: dict) -> str:
        """Who a draft is from: its author and the author of each lesson added to it, once each."""
        names = [str(args.get("author") or ""), *(str(p.get("author") or "") for p in args.get("parts") or [])]
        return ", ".join(n for n in dict.fromkeys(names) if n)[:200]

    def list(self) -> list[dict]:
        out = []
        for name in self.drafts.names():
            data = self.drafts.record(name)
            if data is None:
                continue
            a = data["args"]
            out.append({"name": name, "action": str(a.get("action", "")).upper(),
                        "reason": a.get("reason", ""), "author": self.authors(a),
                        "proposed_at": data.get("proposed_at"), "path": self.drafts.location(name)})
        return out

    def _load(self, name: str) -> dict:
        data = self.drafts.record(name) if isinstance(name, str) else None
        if data is None:
            import difflib

            names = [d["name"] for d in self.list()]
            # only names like the one asked for are offered: another draft is no "did you mean"
            close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.6)
            raise NotFoundError(f"no draft named {str(name)[:80]!r}", suggestions=close,
                                fix="there are no drafts waiting" if not names else None if close else
                                f"{len(names)} draft{'s' * (len(names) != 1)} wait{'s' * (len(names) == 1)}: `skillshelf review list` "
                                "names them")
        if "base_version" not in data and data.get("set_aside"):   # (set aside before drafts named it: the edit's own)
            with contextlib.suppress(SkillshelfError, OSError, AttributeError):
                data["base_version"] = skillmod.parse(self.drafts.text(name)).skill.version   # type: ignore[union-attr]
        return data

    @staticmethod
    def _refs(args: dict) -> tuple[str, builtins.list[str]]:
        """(action, the existing skills a draft's change reads: a FIX's target, a DERIVE's parent,
        a MERGE's sources)."""
        action = str(args.get("action") or "").strip().upper()
        if action == "FIX":
            refs = [args.get("target_skill_name") or args.get("name")]
        elif action == "DERIVE":
            refs = [args.get("target_skill_name")]
        elif action == "MERGE":
            srcs = args.get("source_skill_names") or []
            refs = list(srcs.split(",") if isinstance(srcs, str) else srcs)
        else:
            refs = []
        return action, [r.strip() for r in refs if isinstance(r, str) and r.strip()]

    def _gone(self, args: dict) -> tuple[str, builtins.list[str]]:
        """(action, the skills a draft's change reads that the library no longer has)."""
        action, refs = self._refs(args)
        gone = []
        for ref in refs:
            try:
                self.ev.ports.get(ref)
            except NotFoundError:
                gone.append(ref)
        return action, gone

    def waiting_on(self, skill: str) -> builtins.list[dict]:
        """The drafts whose change reads the skill ``skill`` (by name), each with what becomes of
        it once that skill is gone: a DERIVE can still be approved, as a new skill; a FIX or a
        MERGE cannot, and is rejected by a person."""
        out = []
        for name in self.drafts.names():
            data = self.drafts.record(name)
            if data is None:
                continue
            action, refs = self._refs(data["args"])
            if skill not in refs:
                continue
            if action == "DERIVE":
                then = (f"draft {name} (a DERIVE of {skill}) can still be approved: it becomes a new skill "
                        "with no parent")
            else:
                then = (f"draft {name} (a {action} of {skill}) can no longer be approved: reject it with "
                        f"`skillshelf review reject {name} --reason '{skill} was deleted'`")
            out.append({"name": name, "action": action, "then": then})
        return out

    def _merged(self, name: str, data: dict, plan: Any) -> tuple[dict, Rebased | None]:
        """(the change approving the draft makes now, the three-way merge it took). A FIX draft
        that sends a body, a description or a frontmatter key (tags, skill_type, ...), made from
        a version the skill has moved past, is merged with what was saved since
        (``draft_merge``): a clean merge is approved as that change; a conflict is not approved.
        Any other draft is its change, made on the current text (a lesson is added to the
        lessons saved since); the merge is None."""
        args = dict(data["args"])
        base = data.get("base_version")
        keys = tuple(k for k in META_KEYS if args.get(k) not in (None, "", 0))
        sends_text = bool(args.get("body") or args.get("description"))
        if plan.action != "FIX" or not isinstance(base, int) or not (sends_text or keys):
            return args, None
        try:
            text = self.ev.history.read_version(plan.name, base)
        except (SkillshelfError, OSError):
            if plan.from_version == base:
                return args, None
            return args, Rebased(False, why=f"v{base}, the version it was made from, is no longer kept")
        if text == plan.previous_text:      # (a person's edit on disk may keep the version number)
            return args, None
        own = [str(args.get("lesson") or ""), *(str(p.get("lesson") or "") for p in args.get("parts") or [])]
        m = rebase(text, self.drafts.text(name), plan.previous_text or "", own, sent=keys, text=sends_text)
        if not m.clean:
            return args, m
        return {**args, **m.changes}, m

    @staticmethod
    def _conflict(name: str, base: Any, now: Any, m: Rebased) -> str:
        return (f"{name} changed since v{base}, the version this draft was made from ({_now(base, now)}), and "
                f"{m.why}: approving it is "
                f"refused, so that no change is lost; make the draft's change by hand on the current text (the "
                f"merge below marks what conflicts), then reject the draft with "
                f"`skillshelf review reject {name} --reason ...`")

    def show(self, name: str) -> dict:
        """The draft: ``text`` is what approving it writes now. A FIX applies its change to the
        skill as it is at approval: when the skill moved on since the draft was made (a version
        saved meanwhile), a draft that sends a body or a description is merged three-way with
        what was saved since, a lesson is added to the current lessons, and that is the text
        shown, with a ``note``; ``proposed_text`` is the text as proposed. A merge that conflicts
        shows the merge with conflict markers and is not approvable. When approving would be
        refused now, ``note`` says why; ``approvable`` is false when a skill the change reads is
        gone (a FIX's target, a MERGE's source: only a rejection is left; a DERIVE whose parent
        is gone is approved as a new skill)."""
        data = self._load(name)
        stored = self.drafts.text(name)
        text, note, approvable = stored, "", True
        try:
            plan = self.ev.plan(dict(data["args"]))
            args, merged = self._merged(name, data, plan)
            if merged is not None and not merged.clean:
                approvable = False
                text = merged.marked or stored
                note = self._conflict(name, data.get("base_version"), plan.from_version, merged)
            else:
                if merged is not None:
                    plan = self.ev.plan(args)
                now = planned_text(plan.action, plan.previous_text, plan.skill)
                if merged is not None:
                    text = now
                    note = (f"{name} changed since v{data['base_version']}, the version this draft was made from "
                            f"({_now(data['base_version'], plan.from_version)}): shown is what approving it writes "
                            "now, the draft's change merged with the changes saved since")
                elif now != stored:
                    text = now
                    note = ("the skill changed since this draft was proposed: shown is what approving it writes now, "
                            "the draft's change applied to the current text")
        except SkillshelfError as exc:
            action, gone = self._gone(data["args"])
            if gone and action == "DERIVE":
                note = (f"its parent {gone[0]} is gone: approving it writes it as a new skill with no parent")
            elif gone:
                approvable = False
                note = (f"approving it now is refused: {', '.join(gone)} no longer exist{'s' * (len(gone) == 1)}; "
                        f"reject it with `skillshelf review reject {name} --reason ...`")
            else:
                note = f"approving it now is refused: {exc.message}"
        return {"name": name, "args": data["args"], "proposed_at": data.get("proposed_at"),
                "text": text, "proposed_text": stored, "note": note, "findability": data.get("findability"),
                "approvable": approvable}

    def approve(self, name: str, *, reviewer: str = "") -> SaveResult:
        with self.drafts.lock(name):
            data = self._load(name)
            args = dict(data["args"])
            if args.get("parts"):       # lessons other agents added: the changelog names every author
                args["author"] = self.authors(args)
            if reviewer:
                args["reason"] = (args.get("reason") or "") + f" (approved by {reviewer})"
            action, gone = self._gone(args)
            if gone and action == "DERIVE":
                args = self._orphan(name, args)
            elif gone:
                raise NotFoundError(f"draft {name} is a {action} of {', '.join(gone)}, which no longer "
                                    f"exist{'s' * (len(gone) == 1)}: it cannot be approved",
                                    fix=f"reject it: `skillshelf review reject {name} --reason '...'`")
            else:
                args = self._approved(name, data, args)
            res = self.ev.apply(args, trigger="approved")
            if gone:
                res.message += f" (its parent {gone[0]} is gone: approved as a new skill with no parent)"
            self.drafts.remove(name)
        up = args.get("upstream")
        if isinstance(up, dict) and isinstance(up.get("note"), str) and up["note"]:
            res.message += f" — {up['note']}"      # an upstream conflict: what of the person's text it replaced
        return res

    def _approved(self, name: str, data: dict, args: dict) -> dict:
        """The change approving the draft makes: merged with what was saved since it was made
        (``_merged``); ``ConflictError`` when that merge conflicts."""
        try:
            plan = self.ev.plan(dict(data["args"]))
        except SkillshelfError:
            return args             # (``apply`` says why it is refused)
        _, m = self._merged(name, data, plan)
        if m is None:
            return args
        if not m.clean:
            raise ConflictError(
                f"draft {name} was made from v{data.get('base_version')} of {name}, which changed since "
                f"({_now(data.get('base_version'), plan.from_version)}), and {m.why}: approving it would lose one of "
                "the two changes",
                fix=f"`skillshelf review show {name}` marks what conflicts: make the draft's change by hand on the "
                    f"current text, then reject the draft with `skillshelf review reject {name} --reason ...`")
        return {**args, **m.changes}

    def _orphan(self, name: str, args: dict) -> dict:
        """A DERIVE whose parent is gone, as the new skill it proposed (the text the draft keeps):
        an ARCHIVE of that name, description, body and metadata."""
        try:
            sk = skillmod.parse(self.drafts.text(name)).skill
        except (SkillshelfError, OSError):
            raise NotFoundError(f"draft {name}'s parent is gone and its text cannot be read",
                                fix=f"reject it: `skillshelf review reject {name} --reason '...'`") from None
        if sk is None:
            raise NotFoundError(f"draft {name}'s parent is gone and its text does not parse",
                                fix=f"reject it: `skillshelf review reject {name} --reason '...'`")
        meta = sk.metadata or {}
        return {**args, "action": "ARCHIVE", "name": sk.name, "description": sk.description, "body": sk.body,
                "target_skill_name": "", "tags": args.get("tags") or meta.get("tags") or "",
                "skill_type": args.get("skill_type") or meta.get("skill-type") or ""}

    def reject(self, name: str, reason: str) -> dict:
        reason = check_text(reason, "the reason", max_chars=MAX_REASON_CHARS).strip()
        if not reason:
            raise ValidationError("a reason is required to reject a draft", fix="pass --reason '...'")
        with self.drafts.lock(name):
            data = self._load(name)
            self.drafts.log_rejection({"name": name, "reason": reason, "at": now_iso(), "args": data["args"]})
            self.drafts.remove(name)
        return {"name": name, "rejected": True, "reason": reason}
