"""Comparisons a person reviews before a change: two versions of a skill side by side, a draft
beside the text it would replace, and live checks of a SKILL.md being written (the validator
``skillshelf validate`` runs, and a dry run of a save)."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..catalog.eval_files import read_evals
from ..errors import HeldError, NotFoundError, SkillshelfError, ValidationError
from ..files import MAX_SKILL_BYTES, FileRefused, read_bounded, read_text_bounded
from ..text import visible
from .frontmatter import planned_text

DIFF_CONTEXT = 3


class Comparisons:
    """Given ``resolve`` (a name or id to its record), ``diff`` (a unified diff of two kept
    versions), ``evolver`` and ``review`` (callables returning the evolution service and the
    review queue, built when first needed), ``audit`` (a SKILL.md text -> its audit's
    findings of medium or above, as dicts) and ``gate`` (a callable returning the read gate,
    ``supply.gate.ReadGate``, asked about a draft's base for the reader of a review)."""

    def __init__(self, *, resolve: Callable, diff: Callable, evolver: Callable, review: Callable,
                 audit: Callable[[str], list[dict[str, Any]]] | None = None, gate: Callable[[], Any] | None = None):
        self.get, self._diff, self._evolver, self._review = resolve, diff, evolver, review
        self._audit, self._gate = audit, gate

    def version_text(self, name_or_id: str, version: int) -> str:
        """The full SKILL.md text of a kept version."""
        return self._evolver().version_text(name_or_id, int(version))

    def compare(self, name_or_id: str, v1: int, v2: int, *, context: int = DIFF_CONTEXT) -> dict[str, Any]:
        """Two versions of a skill side by side (rows of ``side_by_side``) and as a unified diff."""
        rec = self.get(name_or_id)
        a, b = self.version_text(rec.id, v1), self.version_text(rec.id, v2)
        return {"name": rec.name, "id": rec.id, "v1": int(v1), "v2": int(v2), "rows": side_by_side(a, b, context),
                "unified": visible(self._diff(rec.id, v1, v2))}

    def draft_review(self, name: str, *, context: int = DIFF_CONTEXT, reader: Any = None) -> dict[str, Any]:
        """A draft with what it would change: the text it would write beside the current
        text of the skill it replaces (FIX, MERGE into an existing name) or derives from
        (DERIVE); a new skill (ARCHIVE) is compared with nothing. For a ``reader`` the read gate
        refuses the base to (a held or blocked skill, for an agent's or a reader's token), the
        base, the draft's text and the diff are left out, and ``withheld`` says why."""
        d = self._review().show(name)
        args = d["args"]
        action = str(args.get("action") or "").upper()
        ref = None
        if action == "FIX":
            ref = args.get("target_skill_name") or args.get("name")
        elif action == "DERIVE":
            ref = args.get("target_skill_name")
        elif action == "MERGE":
            ref = args.get("name") or args.get("target_skill_name")
        base = None
        gate = self._gate() if self._gate is not None and reader is not None else None
        if isinstance(ref, str) and ref.strip():
            try:
                rec = self.get(ref.strip())
                if gate is not None:
                    gate.check(reader, rec)         # decided on the base before anything of it is read
                text = read_text_bounded(rec.path, MAX_SKILL_BYTES)
                if gate is not None:
                    gate.check_text(reader, rec, Path(rec.path).name, text)    # the bytes read, too
                base = {"id": rec.id, "name": rec.name, "version": rec.version, "writable": rec.writable,
                        "text": text}
            except HeldError as exc:
                said = (f"The skill this draft changes is held back from you: {exc.message}. Its text, the "
                        "draft's text and the diff are left out; a curator reviews it.")
                return {"name": d["name"], "action": action, "args": {k: v for k, v in args.items() if k != "body"},
                        "proposed_at": d["proposed_at"], "text": "", "note": said, "withheld": said, "base": None,
                        "unified": "", "rows": [], "findability": None, "findings": [],
                        "approvable": d.get("approvable", True)}
            except (SkillshelfError, OSError):
                base = None
        before = base["text"] if base else ""
        # the unified diff a terminal shows (``review show``), every invisible character visible
        diff = "".join(difflib.unified_diff(before.splitlines(keepends=True), d["text"].splitlines(keepends=True),
                                            f"{base['id']} (v{base['version']})" if base else "(nothing)",
                                            f"draft {d['name']}", n=context))
        # what the audit finds in the text a person is asked to approve (an upstream change, an
        # agent's FIX): read here, before it is on disk and audited as a skill
        findings = self._audit(d["text"]) if self._audit is not None else []
        return {"name": d["name"], "action": action, "args": args, "proposed_at": d["proposed_at"],
                "text": d["text"], "note": d.get("note", ""), "base": base, "unified": visible(diff),
                "rows": side_by_side(before, d["text"], context), "findability": d.get("findability"),
                "findings": findings, "approvable": d.get("approvable", True)}

    # --- checks ---------------------------------------------------------------------------
    @staticmethod
    def validate_text(text: str, *, folder_name: str | None = None) -> dict[str, Any]:
        """Findings for a SKILL.md text: the validator ``skillshelf validate`` runs on files
        (``valid`` is false when one is an error or fatal)."""
        if not isinstance(text, str):
            raise ValidationError("the text must be a string", fix="send the SKILL.md text")
        size = len(text.encode("utf-8"))
        if size > MAX_SKILL_BYTES:
            f = skillmod.Finding("fatal", "file.too-large",
                                 f"the text is {size:,} bytes; the limit is {MAX_SKILL_BYTES:,}")
            return {"valid": False, "name": None, "findings": [f.as_dict()]}
        parsed = skillmod.parse(text, folder_name=folder_name)
        findings = [f.as_dict() for f in parsed.findings]
        valid = not any(f["severity"] in ("fatal", "error") for f in findings)
        return {"valid": valid, "name": parsed.skill.name if parsed.skill else None, "findings": findings}

    @staticmethod
    def validate_paths(paths: list[str | Path]) -> list[tuple[str, list[skillmod.Finding]]]:
        """Findings for each SKILL.md at or under the paths."""
        files: list[Path] = []
        for p in paths:
            p = Path(p)
            if p.is_dir():
                direct = [p / n for n in ("SKILL.md", "skill.md") if (p / n).is_file()]
                files.extend(direct[:1] or sorted(x for x in p.rglob("*") if x.name in ("SKILL.md", "skill.md")))
            elif p.exists() or p.is_symlink():
                files.append(p)      # a special file or a broken link is reported by the read below
            else:
                raise NotFoundError(f"{p} does not exist", fix="pass a SKILL.md file or a folder of skills")
        out = []
        for f in files:
            try:
                parsed = skillmod.parse(read_bounded(f, MAX_SKILL_BYTES), folder_name=f.absolute().parent.name)
            except FileRefused as exc:
                out.append((str(f), [skillmod.Finding("fatal", exc.rule, exc.message)]))
                continue
            except OSError as exc:   # one unreadable file (a link loop, no permission) fails only itself
                out.append((str(f), [skillmod.Finding("fatal", "file.unreadable",
                                                      f"cannot read: {exc.strerror or exc}")]))
                continue
            # a skill's trigger evals (evals/*.json): a malformed file is a finding naming its line
            out.append((str(f), parsed.findings + read_evals(f.absolute().parent).findings))
        return out

    def check_save(self, action: str, **args: Any) -> dict[str, Any]:
        """A dry run of ``save``: the same checks a save makes (names, sizes, conflicts, the
        target's state), then the validator on the file it would write. Writes nothing.
        ``ok`` is true when the save would go through; ``text`` is the SKILL.md it would
        write; ``error`` / ``fix`` say why not."""
        try:
            plan = self._evolver().plan({"action": action, **args})
        except SkillshelfError as exc:
            return {"ok": False, "error": exc.message, "fix": exc.fix, "findings": [], "text": None,
                    "name": None, "version": None}
        text = planned_text(plan.action, plan.previous_text, plan.skill)
        res = self.validate_text(text, folder_name=plan.name)
        keep = plan.action == "FIX"
        extra = [f.as_dict() for f in skillmod.validate_for_write(plan.skill, plan.skill.name, keep_unknown_keys=keep)]
        findings = res["findings"] + [f for f in extra if f not in res["findings"]]
        if keep:    # a FIX keeps the original's keys: not an error of this save
            findings = [f for f in findings if f["rule"] != "keys.unknown"]
        ok = not any(f["severity"] in ("fatal", "error") for f in findings)
        return {"ok": ok, "error": None if ok else "the result would not be a valid skill",
                "fix": None if ok else "fix the fields named below", "findings": findings, "text": text,
                "name": plan.name, "version": plan.skill.version}

    def skill_text(self, name_or_id: str) -> str:
        """The SKILL.md file of a skill as it is on disk."""
        rec = self.get(name_or_id)
        try:
            return read_text_bounded(rec.path, MAX_SKILL_BYTES)
        except OSError as exc:
            raise NotFoundError(f"cannot read {rec.path}: {exc.strerror or exc}",
                                fix="run `skillshelf sync` and try again") from None


# --- side by side ---------------------------------------------------------------------------

def side_by_side(a: str, b: str, context: int = DIFF_CONTEXT) -> list[dict[str, Any]]:
    """Rows for a two-column diff of ``a`` (left) and ``b`` (right): ``kind`` is equal,
    change, delete, insert, or skip (``count`` unchanged lines not shown). Line numbers are
    1-based; a side without a line has None. Every invisible character is shown as
    ``<U+200B>`` (``text.visible``): a line changed only by them must not look unchanged."""
    al, bl = visible(a).splitlines(), visible(b).splitlines()     # only \n and \r\n are left to split at
    rows: list[dict[str, Any]] = []
    sm = difflib.SequenceMatcher(None, al, bl, autojunk=False)
    groups = list(sm.get_grouped_opcodes(context)) if al != bl else []
    if not groups:
        return [{"kind": "skip", "count": len(al), "l_no": None, "l": None, "r_no": None, "r": None}] if al else []
    last = 0
    for group in groups:
        first = group[0][1]
        if first > last:
            rows.append({"kind": "skip", "count": first - last, "l_no": None, "l": None, "r_no": None, "r": None})
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2)):
                    rows.append({"kind": "equal", "l_no": i + 1, "l": al[i], "r_no": j + 1, "r": bl[j]})
            elif tag == "replace":
                n = max(i2 - i1, j2 - j1)
                for k in range(n):
                    i, j = i1 + k, j1 + k
                    rows.append({"kind": "change",
                                 "l_no": i + 1 if i < i2 else None, "l": al[i] if i < i2 else None,
                                 "r_no": j + 1 if j < j2 else None, "r": bl[j] if j < j2 else None})
            elif tag == "delete":
                for i in range(i1, i2):
                    rows.append({"kind": "delete", "l_no": i + 1, "l": al[i], "r_no": None, "r": None})
            elif tag == "insert":
                for j in range(j1, j2):
                    rows.append({"kind": "insert", "l_no": None, "l": None, "r_no": j + 1, "r": bl[j]})
        last = group[-1][2]
    if last < len(al):
        rows.append({"kind": "skip", "count": len(al) - last, "l_no": None, "l": None, "r_no": None, "r": None})
    return rows
