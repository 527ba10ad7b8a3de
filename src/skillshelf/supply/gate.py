"""The read gate: whether a reader may have a skill's text, or any file of it, decided once.

Every read path of the facade asks it -- a skill's body and sections, its other files, a
``skill://`` resource, the Skills Extension's listings, prompts, the dashboard's pages and API,
export -- with the canonical identity of what is read: the skill record the request resolved to
(a name, an id, a path or a URI, decoded and resolved first) and the file inside its folder.
Adapters never decide it themselves.

Two checks, both for an agent's reader (``access.Reader``):

* **held or blocked** (``pins.Gate.hidden``): the skill changed since its collection was
  pinned, appeared in a pinned root after the pin, or is at or above ``trust.block`` without the
  owner's trust. The reader gets ``HeldError`` with the message agents get.
* **the bytes served are the bytes pinned.** For a skill of a pinned root, what is about to be
  served is hashed and compared with the pin *at read time*: the index's SKILL.md (its
  ``content_hash``) for a body, the file's bytes for a resource. A change on disk that no sync
  or watcher has seen yet (auto sync off, or the moment before the watcher fires) is refused
  and the skill held at once, so no window serves unreviewed bytes.

A person's reader (the CLI, the owner's dashboard, a curator's token) reads everything; what
is held is marked where it is shown.

Saves never launder: FIX, DERIVE and MERGE whose inputs include a held or blocked skill are
refused (``check_inputs``), for every reader and write policy, so an agent cannot copy held
text into a skill that is readable.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..access import Reader
from ..errors import HeldError, SkillshelfError
from .pins import Gate, Pins


def _trust_fix(name: str) -> str:
    return f"a person reviews it first: `skillshelf trust {name}` shows what changed and allows it"


def _held(said: str, name: str) -> HeldError:
    """The error for a refusal: the refusal's own "A person must review it first" sentence is
    the error's fix, said once."""
    return HeldError(said.split(" A person must review it first:")[0], fix=_trust_fix(name))


class ReadGate:
    """Given the agent gate (held and blocked skills) and the pins (the digests of pinned files)."""

    def __init__(self, gate: Gate, pins: Pins):
        self.gate, self.pins = gate, pins

    # --- one skill ------------------------------------------------------------------------
    def refusal(self, reader: Reader, rec: Any) -> str | None:
        """Why ``reader`` may not have this skill's text (None: it may). ``rec``: the resolved
        skill record (``id``, ``name``, ``path``, ``content_hash``)."""
        if not reader.agent:
            return None
        said = self.gate.refusal(rec.id, rec.name)
        if said is not None:
            return said
        if self.pins.pinned_root(rec.id) is None:
            return None
        pinned = self.pins.pins.files(rec.id)
        skill_md = Path(rec.path).name
        pin = pinned.get(skill_md)
        if pin is None or not pin.get("sha256") or rec.content_hash != pin["sha256"]:
            return self._hold(rec, "its SKILL.md differs from the pinned one")
        # its other files, as they are on disk now (a stat each; a read only where one moved)
        if self.pins.compare(rec.id, rec.path if Path(rec.path).exists() else None)[0] != "unchanged":
            return self._hold(rec, "its files differ from the pinned ones")
        return None

    def check(self, reader: Reader, rec: Any) -> Any:
        """``rec`` when ``reader`` may have its text, else ``HeldError``."""
        said = self.refusal(reader, rec)
        if said is not None:
            raise _held(said, rec.name)
        return rec

    def check_file(self, reader: Reader, rec: Any, file: str, data: bytes) -> bytes:
        """``data`` (the bytes of ``file``, relative to the skill's folder, about to be served)
        when ``reader`` may have them: the skill is not held, and in a pinned root the bytes
        hash to the pinned file's digest."""
        if not reader.agent:
            return data
        said = self.gate.refusal(rec.id, rec.name)
        if said is None and self.pins.pinned_root(rec.id) is not None:
            pin = self.pins.pins.files(rec.id).get(file)
            if pin is None or not pin.get("sha256") or hashlib.sha256(data).hexdigest() != pin["sha256"]:
                said = self._hold(rec, f"its file {file} differs from the pinned one")
        if said is not None:
            raise _held(said, rec.name)
        return data

    def check_text(self, reader: Reader, rec: Any, file: str, text: str) -> str:
        """``check_file`` of a file read as UTF-8 text (a leading BOM the read dropped is
        allowed for)."""
        if not reader.agent:
            return text
        data = text.encode("utf-8")
        try:
            self.check_file(reader, rec, file, data)
        except HeldError:
            self.check_file(reader, rec, file, b"\xef\xbb\xbf" + data)
        return text

    def hidden_for(self, reader: Reader) -> frozenset[str]:
        """The skill ids a listing for ``reader`` leaves out (none for a person)."""
        return self.gate.hidden_ids() if reader.agent else frozenset()

    def stats_for(self, reader: Reader, st: Any) -> Any:
        """The usage statistics ``st`` (``usage.Stats``) as ``reader`` may have them: the skills held
        from it left out of every list that names skills."""
        hidden = self.hidden_for(reader)
        if not hidden:
            return st
        keep = [u for u in st.per_skill if u.id not in hidden]
        return dataclasses.replace(
            st, per_skill=keep, most_used=[u for u in st.most_used if u.id not in hidden],
            low_success=[u for u in st.low_success if u.id not in hidden],
            worked=[u for u in st.worked if u.id not in hidden],
            never_surfaced=[d for d in st.never_surfaced if d.get("id") not in hidden],
            learning=[d for d in st.learning if d.get("id") not in hidden])

    def _hold(self, rec: Any, what: str) -> str:
        """Hold a skill whose bytes were found to differ from its pin at read time (the watcher
        or the next sync would have), and say so as agents are told."""
        try:
            # every file hashed, also one whose size and time did not move: a difference seen is a hold
            self.pins.check(rec.id, rec.path if Path(rec.path).exists() else None, hashed=True)
        except (OSError, SkillshelfError):
            pass            # gone meanwhile, or a read-only store: refused all the same
        return self.gate.refusal(rec.id, rec.name) or (
            f"{rec.name} is held back from agents: {what}. A person must review it first: "
            f"`skillshelf trust {rec.name}` shows what changed and allows it.")

    # --- saves ----------------------------------------------------------------------------
    def check_inputs(self, recs: Iterable[Any], action: str) -> None:
        """Refuse a save whose inputs (a FIX's target, a DERIVE's parent, a MERGE's sources)
        include a held or blocked skill: its text has not been reviewed, and the save would copy
        it into a skill agents can read."""
        for rec in recs:
            if self.pins.pinned_root(rec.id) is not None:
                # what the save will read is the file on disk now: compare it with the pin first
                self._hold(rec, "it changed since its collection was pinned")
            why = self.gate.hidden().get(rec.id)
            if why is not None:
                raise HeldError(f"{action} of {rec.name} refused: it is held back from agents ({why})",
                                fix=_trust_fix(rec.name) + "; then save again")

