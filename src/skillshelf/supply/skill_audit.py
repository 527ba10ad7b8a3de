"""Auditing a library's skills: every file of each skill, findings kept by content, and the
owner's trust after review.

A skill's files are the regular files of its folder, hidden ones included, except nested
skills (a folder with its own SKILL.md), version-control and cache folders
(:data:`NOT_WALKED`) and dependency folders (:data:`DEPENDENCY_DIRS`, reported, not read). At
most :data:`MAX_FILES` files are taken; every read is bounded (``files.read_bounded``): a file
over :data:`MAX_HASH_BYTES` is neither hashed nor audited, one over ``audit.MAX_AUDIT_BYTES``
is hashed but not audited, each with a ``files.not-audited`` finding. A link to a file outside
the skill folder is never read (it could be anyone's file: ``~/.ssh/id_rsa``): it gets a
``files.outside-link`` finding and is compared by size and time only.

:class:`Auditor` audits a skill and keeps the result by content (``store.audit.Audits``): a
file whose size and time are unchanged is not read again, one whose bytes hash the same keeps
its findings, and the skill's *content key* (a hash over its files' hashes) says whether the
owner's trust still applies. A skill's risk is its worst finding (``audit.risk``).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import NotFoundError
from ..files import MAX_RESOURCE_BYTES, MAX_SKILL_BYTES, FileRefused, read_bounded
from ..store import Store, now
from ..store.audit import Audits
from . import file_audit as audit
from .file_audit import RULES, RULES_VERSION, Finding, severity_at_least
from .intent_model import SentenceModel

MAX_FILES = 2_000
OPINION_FILES = 6               # files the optional model pass reads: the SKILL.md and the first scripts
MAX_OPINION_BYTES = 200_000
MAX_HASH_BYTES = MAX_RESOURCE_BYTES
# version control, and the caches a tool writes when the skill's own code is run or checked (an editor's settings,
# with the run configurations it runs, and a folder named .cache are shipped like any other: they are read)
NOT_WALKED = {".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox"}
DEPENDENCY_DIRS = {"node_modules", ".venv", "venv", "site-packages", "bower_components"}
SKILL_FILES = ("SKILL.md", "skill.md")
# the first bytes of a compiled program: ELF, Windows PE, Mach-O (both byte orders, fat), Java class
_EXECUTABLE_MAGIC = (b"\x7fELF", b"MZ", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xfe\xed\xfa\xcf",
                     b"\xfe\xed\xfa\xce", b"\xca\xfe\xba\xbe")


@dataclass
class FileState:
    """One file of a skill as found on disk (not read)."""

    file: str              # relative to the skill folder, with '/'
    path: str
    size: int
    mtime_ns: int
    executable: bool = False
    outside: bool = False  # a link to a file outside the skill folder: compared by size and time only


@dataclass
class Walk:
    """A skill folder's files and what was left out (as findings about the folder)."""

    files: list[FileState] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def walk_skill(skill_md: str | Path, limit: int = MAX_FILES) -> Walk:
    """The files of the skill whose SKILL.md is ``skill_md``: the SKILL.md first, then the others
    by name. Links are followed to files and folders inside the skill folder only."""
    skill_md = os.fspath(skill_md)
    base, md_name = os.path.split(skill_md)
    out = Walk()
    base_r: list[Path] = []           # the resolved folder, worked out at the first link

    def inside(path: str) -> bool:
        if not base_r:
            try:
                base_r.append(Path(base).resolve())
            except (OSError, RuntimeError):
                return False
        return _inside(base_r[0], Path(path))

    stack = [(base, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue              # a folder that cannot be listed is passed over
        subdirs = []
        for e in entries:
            rel = prefix + e.name
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            if is_dir:
                if e.name in NOT_WALKED or any(os.path.lexists(os.path.join(e.path, n)) for n in SKILL_FILES):
                    continue      # version control and caches; a nested skill is a skill of its own
                if e.name in DEPENDENCY_DIRS:
                    out.findings.append(Finding("files.not-audited", "low", rel + "/", 0, rel + "/",
                                                f"{rel}/ is a dependency folder: it is neither audited nor pinned"))
                elif e.is_symlink():
                    if not inside(e.path):
                        out.findings.append(Finding("files.outside-link", "medium", rel + "/", 0, rel + "/",
                                                    f"{rel}/ links to a folder outside the skill: not read"))
                else:
                    subdirs.append((e.path, rel + "/"))
                continue
            if not prefix and e.name == md_name:
                continue
            try:
                st = e.stat()     # follows a link: what a read would open
            except OSError:
                continue          # a dangling link, a file removed meanwhile
            if not stat.S_ISREG(st.st_mode):
                continue          # FIFOs, sockets and devices are never read
            if len(out.files) >= limit - 1:
                out.findings.append(Finding("files.not-audited", "medium", rel, 0, rel,
                                            f"more than {limit:,} files: the rest are neither audited nor pinned"))
                stack.clear()
                break
            outside = e.is_symlink() and not inside(e.path)
            out.files.append(FileState(rel, e.path, st.st_size, st.st_mtime_ns, bool(st.st_mode & 0o111), outside))
            if outside:
                out.findings.append(Finding("files.outside-link", "medium", rel, 0, rel,
                                            f"{rel} links to a file outside the skill: not read, compared by size "
                                            "and time only"))
        stack.extend(reversed(subdirs))
    out.files.sort(key=lambda f: f.file)
    try:
        st = os.stat(skill_md)
        out.files.insert(0, FileState(md_name, skill_md, st.st_size, st.st_mtime_ns, bool(st.st_mode & 0o111)))
    except OSError:
        pass
    return out


def _inside(base_r: Path, p: Path) -> bool:
    try:
        return base_r in p.resolve().parents
    except (OSError, RuntimeError):
        return False


def read_file(state: FileState, skill_md: str) -> bytes:
    """The bytes of a skill's file, bounded (``FileRefused`` over the cap)."""
    return read_bounded(state.path, MAX_SKILL_BYTES if state.file == skill_md else MAX_HASH_BYTES)


def content_key(files: Iterable[tuple[str, str | None, int, int]]) -> str:
    """The key of a skill's content: a hash over its (file, sha256) pairs (size and time for a
    file that is not hashed)."""
    h = hashlib.sha256()
    for name, sha, size, mtime in sorted(files):
        h.update(f"{name}\0{sha if sha else f'{size}:{mtime}'}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _script_like(state: FileState) -> bool:
    return state.executable or audit.file_kind(state.file) == "script"


def audit_file(state: FileState, data: bytes | None, *, security_topic: bool, refused: str | None = None,
               sentences: SentenceModel | None = None) -> list[Finding]:
    """The findings of one file of a skill given its bytes (None with ``refused``: why it could not be read)."""
    name = state.file
    if data is None:
        sev = "medium" if _script_like(state) else "low"
        return [Finding("files.not-audited", sev, name, 0, name, f"{name} was not audited: {refused}")]
    head = data[:8192]
    if b"\0" in head:
        if head.startswith(_EXECUTABLE_MAGIC):
            return [Finding("files.binary", RULES["files.binary"].severity, name, 0, name,
                            f"{name} is a compiled program ({len(data):,} bytes): it cannot be reviewed")]
        return []         # images, fonts, archives: data an agent does not follow
    cap = MAX_SKILL_BYTES if name in ("SKILL.md", "skill.md") else audit.MAX_AUDIT_BYTES
    if len(data) > cap:
        sev = "medium" if _script_like(state) else "low"
        return [Finding("files.not-audited", sev, name, 0, name,
                        f"{name} is {len(data):,} bytes, over the {cap:,}-byte audit cap: it was hashed, not read")]
    kind = audit.file_kind(name, data[:2])
    if kind == "text" and state.executable:
        kind = "script"
    return audit.audit_bytes(data, name, kind=kind, security_topic=security_topic, sentences=sentences)


@dataclass
class SkillAudit:
    """The audit of one skill: its findings (SKILL.md's first), its risk, the content key of the
    files it was made from, and whether the owner trusts this content."""

    skill_id: str
    content_key: str
    risk: str
    findings: list[Finding]
    audited_at: str
    trusted: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"skill_id": self.skill_id, "content_key": self.content_key, "risk": self.risk,
                "findings": [f.as_dict() for f in self.findings], "audited_at": self.audited_at,
                "trusted": self.trusted}


def audit_folder(skill_md: str | Path, *, skill_md_bytes: bytes | None = None,
                 previous: dict[str, dict[str, Any]] | None = None, reuse: bool = True,
                 sentences: SentenceModel | None = None) -> tuple[list[Finding], list[dict[str, Any]]]:
    """The findings of every file of a skill and the state of each file (``file``, ``sha256``,
    ``size``, ``mtime_ns``, ``findings`` as dicts). ``previous``: the states of the last audit:
    a file whose size and time match is not read, one that hashes the same keeps its findings
    (when ``reuse`` -- the SKILL.md and the rules are unchanged). ``sentences``: the learned model
    of intent (none: the rules alone)."""
    skill_md = Path(skill_md)
    walk = walk_skill(skill_md)
    previous = previous or {}
    states: list[dict[str, Any]] = []
    findings: list[Finding] = []
    topic: bool | None = None
    for st in walk.files:
        old = previous.get(st.file)
        if st.outside:
            states.append({"file": st.file, "sha256": None, "size": st.size, "mtime_ns": st.mtime_ns, "findings": []})
            continue
        if reuse and old and old.get("sha256") and old["size"] == st.size and old["mtime_ns"] == st.mtime_ns:
            states.append(old)
            findings.extend(Finding.from_dict(f) for f in old["findings"])
            continue
        data, refused = None, None
        try:
            data = skill_md_bytes if (st.file == skill_md.name and skill_md_bytes is not None) else read_file(st, skill_md.name)
        except FileRefused as exc:
            refused = exc.message
        except OSError as exc:
            refused = f"cannot be read ({exc.strerror or exc})"
        sha = hashlib.sha256(data).hexdigest() if data is not None else None
        if reuse and old and sha and old.get("sha256") == sha:
            fs = [Finding.from_dict(f) for f in old["findings"]]
        else:
            if topic is None:
                topic = _topic(skill_md, skill_md_bytes, st, data)
            fs = audit_file(st, data, security_topic=topic, refused=refused, sentences=sentences)
        states.append({"file": st.file, "sha256": sha, "size": st.size, "mtime_ns": st.mtime_ns,
                       "findings": [f.as_dict() for f in fs]})
        findings.extend(fs)
    findings.extend(walk.findings)
    return findings, states


def _topic(skill_md: Path, given: bytes | None, st: FileState, data: bytes | None) -> bool:
    if st.file == skill_md.name and data is not None:
        return audit.security_topic_of(data)
    if given is not None:
        return audit.security_topic_of(given)
    try:
        return audit.security_topic_of(read_bounded(skill_md, MAX_SKILL_BYTES))
    except (OSError, FileRefused):
        return False


def _walk_differs(skill_md: str | Path, prev: dict[str, tuple[int, int]]) -> bool:
    """Whether the skill's files on disk differ (names, sizes, times) from ``prev``."""
    walk = walk_skill(skill_md)
    if len(walk.files) != len(prev):
        return True
    return any(prev.get(f.file) != (f.size, f.mtime_ns) for f in walk.files)


class Opinion(Protocol):
    """The optional model pass (``skillshelf.judge.audit_opinion.AuditOpinion``): given a skill's
    files (name, text), the findings a model adds, as dicts."""

    def enabled(self) -> bool: ...

    def label(self) -> str: ...

    def __call__(self, skill_md: str | Path, files: list[tuple[str, str]]) -> list[dict[str, Any]]: ...


class Auditor:
    """Audits skills and keeps the results by content in ``audits`` (``store.audit.Audits`` or
    another backend's class with the same methods)."""

    def __init__(self, audits: Audits | Store, *, opinion: Opinion | None = None,
                 embed: Callable[[], Any] | Any | None = None, sentences: SentenceModel | None = None):
        self.audits = Audits(audits) if isinstance(audits, Store) else audits
        self.opinion = opinion
        # the learned model of intent, over the vectors of the embedder ``embed`` gives (the library's
        # ``model``, loaded only when a sentence needs a score, or a callable returning an embedder):
        # off without an embedder, or with one its weights were not fitted for
        self.sentences = sentences if sentences is not None else SentenceModel(embed) if embed is not None else None

    def rules_version(self) -> str:
        """The rules a stored audit was made with: the rules' version, the learned model of intent
        when it is on, and the model when the optional model pass is on (changing any audits again)."""
        labels = [lb for lb in (self.sentences.label() if self.sentences is not None else "",
                                self.opinion.label() if self.opinion is not None else "") if lb]
        return "+".join([RULES_VERSION, *labels])

    def _opinion(self, skill_md: str | Path, findings: list[Finding], states: list[dict[str, Any]]) -> list[Finding]:
        """The model's findings on a skill the rules did not find high (the SKILL.md and the first
        few scripts beside it, read bounded); none when the pass is off."""
        if self.opinion is None or not self.opinion.enabled() or audit.risk(findings) == "high":
            return []
        base = Path(skill_md).parent
        names = [Path(skill_md).name] + [s["file"] for s in states if s["file"] != Path(skill_md).name
                                          and audit.file_kind(s["file"]) == "script"][:OPINION_FILES - 1]
        files: list[tuple[str, str]] = []
        for name in names:
            try:
                files.append((name, read_bounded(base / name, MAX_OPINION_BYTES).decode("utf-8", "replace")))
            except (OSError, FileRefused):
                continue
        return [Finding.from_dict(d) for d in self.opinion(skill_md, files)]

    def audit_skill(self, skill_id: str, skill_md: str | Path, *, skill_md_bytes: bytes | None = None,
                    tx=None, force: bool = False) -> SkillAudit:
        """Audit a skill (only what changed since its last audit, unless ``force``) and keep the
        result; inside the caller's transaction ``tx`` when given (indexing's)."""
        previous = {} if force else self.audits.file_states(skill_id, tx)
        stored = None if force else self.audits.get(skill_id)
        version = self.rules_version()
        reuse = bool(stored and stored["rules_version"] == version)
        if reuse and previous:
            # findings of other files depend on the SKILL.md (a skill about security quotes attacks)
            md = Path(skill_md).name
            old_md = previous.get(md)
            try:
                st = os.stat(skill_md)
                reuse = bool(old_md and old_md["size"] == st.st_size and old_md["mtime_ns"] == st.st_mtime_ns)
            except OSError:
                reuse = False
            if not reuse and old_md and skill_md_bytes is not None:
                reuse = old_md.get("sha256") == hashlib.sha256(skill_md_bytes).hexdigest()
        findings, states = audit_folder(skill_md, skill_md_bytes=skill_md_bytes, previous=previous, reuse=reuse,
                                        sentences=self.sentences)
        if not reuse:
            version = self.rules_version()    # the model of intent may have failed to load while reading
        key = content_key((s["file"], s["sha256"], s["size"], s["mtime_ns"]) for s in states)
        if stored and stored["content_key"] == key and stored["rules_version"] == version:
            findings += [Finding.from_dict(d) for d in stored["findings"] if d.get("rule") == "model.opinion"]
        else:
            findings += self._opinion(skill_md, findings, states)
        rk = audit.risk(findings)
        at = now()
        dicts = [f.as_dict() for f in findings]
        if not (stored and stored["content_key"] == key and stored["rules_version"] == version
                and stored["findings"] == dicts and _same_states(previous, states)):
            self.audits.save(skill_id, content_key=key, rules_version=version, risk=rk, findings=dicts,
                             files=states, at=at, tx=tx)
        else:
            at = stored["audited_at"]
        trusted = self.audits.trusted(skill_id)
        return SkillAudit(skill_id, key, rk, findings, at, trusted=bool(trusted and trusted["content_key"] == key),
                          files=states)

    def refresh(self, skills: Iterable[tuple[str, str | Path]]) -> list[str]:
        """Re-audit the skills (id, SKILL.md path) whose files changed on disk since their last
        audit (or that were never audited): a walk and a stat per file, a read only of what
        changed. Returns the ids whose content key changed."""
        changed = []
        skills = list(skills)
        # many skills (a full sync): what was audited is read in two queries, not two per skill
        known = self.audits.all_file_stats() if len(skills) > 50 else None
        version = self.rules_version()
        for sid, path in skills:
            if known is not None:
                if known[0].get(sid) == version and not _walk_differs(path, known[1].get(sid, {})):
                    continue
                before = self.audits.get(sid)
            else:
                before = self.audits.get(sid)
                if before is not None and before["rules_version"] == version \
                        and not self._stat_changed(sid, path):
                    continue
            after = self.audit_skill(sid, path)
            if before is None or before["content_key"] != after.content_key:
                changed.append(sid)
        return changed

    def _stat_changed(self, skill_id: str, skill_md: str | Path) -> bool:
        prev = self.audits.file_states(skill_id)
        walk = walk_skill(skill_md)
        if {s.file for s in walk.files} != set(prev):
            return True
        return any(prev[s.file]["size"] != s.size or prev[s.file]["mtime_ns"] != s.mtime_ns for s in walk.files)

    def forget(self, skill_id: str, tx=None) -> None:
        """Drop a skill's audit (its files are gone)."""
        self.audits.forget(skill_id, tx)

    def get(self, skill_id: str) -> SkillAudit | None:
        """The kept audit of a skill, or None when it was never audited."""
        row = self.audits.get(skill_id)
        if row is None:
            return None
        trusted = self.audits.trusted(skill_id)
        return SkillAudit(skill_id, row["content_key"], row["risk"], [Finding.from_dict(f) for f in row["findings"]],
                          row["audited_at"], trusted=bool(trusted and trusted["content_key"] == row["content_key"]))

    def findings(self, skill_ids: Iterable[str] | None = None, *, min_severity: str = "low") -> list[tuple[str, Finding]]:
        """(skill id, finding) of the kept audits at ``min_severity`` or above, by skill id then
        file and line: of these skills, or of every audited skill (``skillshelf audit``)."""
        if min_severity not in audit.RANK or min_severity == "none":
            raise ValueError(f"not a severity: {min_severity!r} (low, medium or high)")
        wanted = None if skill_ids is None else set(skill_ids)
        out = []
        for sid, _, found in self.audits.all_findings():
            if wanted is not None and sid not in wanted:
                continue
            out += [(sid, f) for f in map(Finding.from_dict, found) if severity_at_least(f.severity, min_severity)]
        return out

    def risks(self, skill_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Skill id -> risk (``none`` for a skill not audited)."""
        ids = None if skill_ids is None else list(skill_ids)
        found = self.audits.risks(ids)
        return found if ids is None else {sid: found.get(sid, "none") for sid in ids}

    def counts(self) -> dict[str, int]:
        """How many skills have each risk (``none`` … ``high``), and how many are trusted."""
        c = {s: 0 for s in audit.SEVERITIES}
        c.update(self.audits.counts())
        c["trusted"] = len(self.audits.trusts())
        return c

    def blocked(self, level: str) -> frozenset[str]:
        """The skills whose risk is ``level`` or above and whose current content the owner has
        not trusted: hidden from agents when ``trust.block`` is ``level`` (``none``: nothing)."""
        if level == "none":
            return frozenset()
        if level not in audit.RANK:
            raise ValueError(f"not a risk level: {level!r}")
        risks = [s for s in audit.SEVERITIES if s != "none" and severity_at_least(s, level)]
        at_risk = self.audits.at_risk(risks)
        trusts = self.audits.trusts()
        return frozenset(sid for sid, key in at_risk.items() if trusts.get(sid) != key)

    def trust(self, skill_id: str, *, note: str = "") -> dict[str, Any]:
        """Allow the skill's current content after review. It must have been audited; a later
        change of any of its files makes the trust lapse (it is kept by content key)."""
        row = self.audits.get(skill_id)
        if row is None:
            raise NotFoundError(f"{skill_id} has not been audited yet", fix="run `skillshelf sync`, then trust it")
        return self.audits.trust(skill_id, content_key=row["content_key"], risk=row["risk"], note=note, at=now())

    def untrust(self, skill_id: str) -> bool:
        return self.audits.untrust(skill_id)

    def headline(self, skill_id: str) -> str | None:
        """The one line a medium or high skill's text starts with for an agent (None otherwise)."""
        a = self.get(skill_id)
        if a is None or not severity_at_least(a.risk, "medium"):
            return None
        worst = [f for f in a.findings if f.severity == a.risk]
        what = "; ".join(f"{f.message} ({f.file}:{f.line})" if f.line else f.message for f in worst[:3])
        more = f" and {len(worst) - 3} more" if len(worst) > 3 else ""
        trust = " The owner trusts this content." if a.trusted else ""
        return f"Audit: {a.risk} risk — {what}{more}.{trust}"

    def generation(self) -> str:
        """Changes whenever an audit or a trust does (a cache of ``blocked`` is stale then)."""
        return self.audits.generation()


def _same_states(previous: dict[str, dict[str, Any]], states: list[dict[str, Any]]) -> bool:
    if set(previous) != {s["file"] for s in states}:
        return False
    return all(previous[s["file"]].get("sha256") == s["sha256"] and previous[s["file"]]["size"] == s["size"]
               and previous[s["file"]]["mtime_ns"] == s["mtime_ns"] for s in states)
