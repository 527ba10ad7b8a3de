"""Copying a local library into a team store (``skillshelf migrate-store --to URL``), and
bringing a team store's schema up to date (``migrate-store --upgrade``).

What a team shares is copied: the workspace's skills (SKILL.md and their other files byte for
byte, every version kept in ``history/`` and every changelog entry), the drafts waiting for
review and the log of rejected ones, the overlays (the owner's decisions on skills of
read-only roots), what the owner decided about the supply (every held skill, an import's
hold with its content key and name wherever it is, pinned roots, trusts, and the sources with
their lock, which every server then fetches itself), the
usage logs (queries with their recommendations, outcomes), learning memory and the judge log.
Read-only roots are not copied: each server scans its own checkout.

A run copies only what the team store lacks (``store.pg_migrate`` says how it knows), so a
second run copies nothing twice and a run cut short can simply be run again. A skill, draft
or overlay the team store holds already is counted as there when it is the same, and left
out, named, when it differs: nothing in the team store is overwritten. A dry run reads both
sides and writes nothing (not even the schema of a new database).

A workspace skill whose current text is not among its kept versions (edited in an editor, or
written outside skillshelf) is copied with that text kept as a version of its own, as the
library does before it changes such a skill, so the team store's history holds every text."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import skill as skillmod
from ..errors import ConfigError, SkillshelfError
from ..evolution.evolve import FOUND_ON_DISK
from ..evolution.history import MAX_CHANGELOG_BYTES, ChangelogEntry, FileHistory
from ..files import MAX_SKILL_BYTES, FileRefused, read_bounded
from ..store import Store, now
from ..store.pg_migrate import LocalRows, TeamCopy, open_target
from ..store.pg_pins import PgPinnedContent
from ..store.pins import PinnedContent
from ..store.postgres import redact
from .unpack import skill_files

# what is copied, in the order it is copied and reported
KINDS = ("skills", "versions", "changelog entries", "drafts", "rejected drafts", "overlays", "held skills",
         "pinned roots", "trusts", "sources", "queries", "recommendations", "outcomes", "learned reports",
         "judged searches")
AUTHOR = "migrate-store"


@dataclass
class MigrationReport:
    """What ``migrate`` copied (or, for a dry run, would copy) per kind, what the team store
    had already, and what was left out and why."""

    source: str
    target: str                     # the team store's URL without its password
    dry_run: bool
    copied: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    already: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    left_out: list[dict[str, str]] = field(default_factory=list)    # kind, name, why
    notes: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)    # migrations applied to the team store now
    pending: list[str] = field(default_factory=list)    # (dry run) migrations a run would apply first
    seconds: float = 0.0

    def leave_out(self, kind: str, name: str, why: str) -> None:
        self.left_out.append({"kind": kind, "name": name, "why": why})

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "dry_run": self.dry_run, "copied": dict(self.copied),
                "already": dict(self.already), "left_out": list(self.left_out), "notes": list(self.notes),
                "applied": list(self.applied), "pending": list(self.pending), "seconds": round(self.seconds, 3)}


def upgrade(url: str) -> dict[str, Any]:
    """Apply the team store's pending migrations. Returns ``applied`` (their names, in order)
    and ``schema`` (the last one applied now)."""
    pg, applied, _ = open_target(url, write=True)
    try:
        return {"target": redact(url), "applied": applied, "schema": pg.schema_version()}
    finally:
        pg.close()


def migrate(config: Any, store: Store, url: str, *, dry_run: bool = False,
            on_kind: Callable[[str], None] | None = None,
            sources: Callable[[], dict[str, str]] | None = None) -> MigrationReport:
    """Copy the local library of ``config`` (its files) and ``store`` (its SQLite store) into
    the team store at ``url``; ``dry_run``: only count. ``on_kind(kind)`` is told when each
    kind starts (a long usage log takes a while). ``sources()``: the local ``skillshelf.lock``,
    each source's document by label (``supply.lock.documents``)."""
    if getattr(config, "store", ""):
        raise ConfigError("migrate-store copies a local library into a team store, and this library runs on a team "
                          "store already",
                          fix="name the local library with --home (without --store or SKILLSHELF_STORE) and the "
                              "team store with --to")
    t0 = time.perf_counter()
    report = MigrationReport(source=str(config.home), target=redact(url), dry_run=dry_run)
    pg, report.applied, report.pending = open_target(url, write=not dry_run)
    try:
        rows = LocalRows(store)
        team = TeamCopy(pg, rows.library_id(), empty=bool(dry_run and report.pending))
        say = on_kind or (lambda kind: None)
        say("skills")
        _skills(config, team, report)
        say("drafts")
        _drafts(Path(config.drafts), team, report)
        say("overlays")
        _overlays(rows, team, report)
        say("held skills")
        _held(store, team, report)
        say("pinned roots")
        _pins(rows, team, report)
        say("trusts")
        _trusts(rows, team, report)
        if sources is not None:
            say("sources")
            _sources(sources, team, report)
        say("queries")
        _queries(rows, team, report)
        say("outcomes")
        _outcomes(rows, team, report)
        say("learned reports")
        _marked(rows, team, report, "learned", "learned reports", rows.learned, team.copy_learned)
        say("judged searches")
        _marked(rows, team, report, "judge_log", "judged searches", rows.judge_log, team.copy_judged)
    finally:
        pg.close()
    report.seconds = time.perf_counter() - t0
    return report


# --- the workspace ---------------------------------------------------------------------------

def _plain(name: str) -> bool:
    return len(name) <= skillmod.MAX_NAME and bool(skillmod.NAME_RE.match(name))


def _skill_folders(workspace: Path, report: MigrationReport) -> Iterator[Path]:
    """The workspace's skill folders whose name a team store can keep (the others are left out)."""
    if not workspace.is_dir():
        return
    for entry in sorted(workspace.iterdir()):
        name = entry.name
        if name.startswith(".") or not entry.is_dir():
            continue
        if entry.is_symlink():
            report.leave_out("skills", name, "a linked folder: copy the skill into the workspace to share it")
            continue
        if not (entry / "SKILL.md").is_file():
            if (entry / "skill.md").is_file():
                report.leave_out("skills", name, "its file is named skill.md: rename it SKILL.md, then run "
                                                 "migrate-store again")
            elif next(entry.rglob("SKILL.md"), None) is not None:
                report.leave_out("skills", name, "holds skills in subfolders: a team workspace keeps each skill in a "
                                                 "folder of its own at the top")
            continue
        if not _plain(name):
            report.leave_out("skills", name, "not a plain skill name (lowercase letters, digits and single hyphens, "
                                             f"at most {skillmod.MAX_NAME}): rename the folder and its name: field")
            continue
        yield entry


def _history(hist: FileHistory, name: str) -> tuple[list[tuple[int, bytes]], list[str]]:
    """The versions kept of ``name`` (bytes as written) and its changelog (the JSON lines that
    are entries; a line torn by a crash is left, as the library itself skips it)."""
    folder = hist.dir(name)
    versions = [(v, read_bounded(folder / f"v{v}.md", MAX_SKILL_BYTES)) for v in hist.versions(name)]
    lines: list[str] = []
    log = folder / "changelog.jsonl"
    if log.is_file():
        for line in read_bounded(log, MAX_CHANGELOG_BYTES).decode("utf-8", "replace").splitlines():
            try:
                ChangelogEntry.from_dict(json.loads(line))
            except (ValueError, TypeError):
                continue
            lines.append(line)
    return versions, lines


def _current_version(name: str, text: bytes, versions: list[tuple[int, bytes]], lines: list[str]) -> int:
    """The version number of the text ``text``: the kept version holding it, or (appended to
    ``versions``, with a changelog line) a new one numbered as the library numbers a text
    found on disk."""
    parsed = skillmod.parse(text).skill
    claimed = skillmod.parse_version(parsed.metadata.get("version")) if parsed is not None else None
    same = [v for v, t in versions if t == text]
    if same:
        return claimed if claimed in same else same[-1]
    kept = [v for v, _ in versions]
    version = claimed if claimed and (not kept or claimed > kept[-1]) else (kept[-1] + 1 if kept else 1)
    versions.append((version, text))
    lines.append(json.dumps(ChangelogEntry(
        now(), "FOUND", name, None, version, "person",
        "kept as found on disk when the library was copied into the team store", [], FOUND_ON_DISK).as_dict(),
        ensure_ascii=False))
    return version


def _skills(config: Any, team: TeamCopy, report: MigrationReport) -> None:
    hist = FileHistory(config.home)
    folders = list(_skill_folders(Path(config.workspace), report))
    states = team.skill_states([f.name for f in folders])
    for folder in folders:
        name = folder.name
        try:
            sf = skill_files(folder, "SKILL.md")
            versions, lines = _history(hist, name)
        except FileRefused as exc:
            report.leave_out("skills", name, f"{exc.message}: {exc.fix}" if exc.fix else exc.message)
            continue
        except OSError as exc:
            report.leave_out("skills", name, f"cannot read it ({exc.strerror or exc}): check the folder's permissions")
            continue
        report.notes += [f"{name}: {n}" for n in sf.notes]
        text = sf.files.pop("SKILL.md")
        digest = hashlib.sha256(text).hexdigest()
        have = states.get(name)
        if have is None and not report.dry_run:
            version = _current_version(name, text, versions, lines)
            files = {p: (b, hashlib.sha256(b).hexdigest()) for p, b in sf.files.items()}
            got = team.copy_skill(name, text, digest, version, files=files, versions=versions, changelog=lines,
                                  author=AUTHOR)
            have = None if got is None else (("", True) if got == "deleted" else (got, False))
        elif have is None:
            _current_version(name, text, versions, lines)
        if have is None:
            report.copied["skills"] += 1
            report.copied["versions"] += len(versions)
            report.copied["changelog entries"] += len(lines)
        elif have[1]:
            report.leave_out("skills", name, "was deleted in the team store: it is not brought back (save it "
                                             "through a server to have it again)")
        elif have[0] == digest:
            report.already["skills"] += 1
            report.already["versions"] += len(versions)
            report.already["changelog entries"] += len(lines)
        else:
            report.leave_out("skills", name, "the team store has a different skill of this name: nothing of the "
                                             "local one was copied (give it another name, or merge the two through "
                                             "a server)")


def _drafts(base: Path, team: TeamCopy, report: MigrationReport) -> None:
    if not base.is_dir():
        return
    have = team.draft_states()
    for folder in sorted(base.iterdir()):
        name = folder.name
        if not folder.is_dir() or folder.is_symlink() or not _plain(name):
            continue
        try:
            text = read_bounded(folder / "SKILL.md", MAX_SKILL_BYTES)
            record = read_bounded(folder / "draft.json", MAX_SKILL_BYTES * 2).decode("utf-8")
            if not isinstance(json.loads(record), dict):
                raise ValueError("not an object")
        except (OSError, FileRefused, ValueError) as exc:
            why = getattr(exc, "strerror", None) or getattr(exc, "message", None) or str(exc)
            report.leave_out("drafts", name, f"its SKILL.md or draft.json cannot be read ({why}): review it locally "
                                             "(`skillshelf review list`) first")
            continue
        if name in have:
            if have[name] == (text, record):
                report.already["drafts"] += 1
            else:
                report.leave_out("drafts", name, "the team store has a different draft of this name: review the "
                                                 "local one before copying (`skillshelf review show`)")
            continue
        if report.dry_run or team.copy_draft(name, text, record):
            report.copied["drafts"] += 1
        else:
            report.already["drafts"] += 1
    entries: list[tuple[str, str]] = []
    log = base / "rejected.jsonl"
    if log.is_file():
        for line in read_bounded(log, MAX_CHANGELOG_BYTES).decode("utf-8", "replace").splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                entries.append((str(data.get("name", "")), line))
    new = team.new_rejections(entries)
    report.copied["rejected drafts"] += len(new) if report.dry_run else team.copy_rejections(new)
    report.already["rejected drafts"] += len(entries) - len(new)


def _each(report: MigrationReport, kind: str, items: list[dict[str, Any]], *, key: str,
          states: Callable[[], dict[str, Any]], copy: Callable[[dict[str, Any]], bool],
          same: Callable[[Any, dict[str, Any]], bool], why: Callable[[Any], str]) -> None:
    """Copy each item the team store lacks (by ``key``); one it has is counted as there when it
    is the ``same``, else left out, named, with ``why``: nothing in the team store is overwritten."""
    have = states()
    for item in items:
        k = item[key]
        theirs = have.get(k)
        if theirs is None:
            if report.dry_run or copy(item):
                report.copied[kind] += 1
                continue
            theirs = states().get(k)        # another copy came first
        if theirs is not None and same(theirs, item):
            report.already[kind] += 1
        else:
            report.leave_out(kind, k, why(theirs))


def _overlays(rows: LocalRows, team: TeamCopy, report: MigrationReport) -> None:
    _each(report, "overlays", rows.overlays(), key="skill_id", states=team.overlay_states, copy=team.copy_overlay,
          same=lambda theirs, ov: all(theirs[k] == ov[k] or (k == "updated_at" and not ov[k]) for k in theirs),
          why=lambda theirs: "the team store has its own decision about this skill "
                             f"({(theirs or {}).get('status') or 'no status'}): the local one was not copied")


# --- the supply: pins, trusts, sources -------------------------------------------------------

def _held(store: Store, team: TeamCopy, report: MigrationReport) -> None:
    """Every skill the local library holds back from agents, held in the team store too, with
    its origin: an import's hold (its content key and name), in no pinned root or in one, as
    well as a skill held in a pinned root (held again when its root is copied). A skill the
    team store holds already is there; none is released. Before the pinned roots: a root the
    team store pins already is not copied, and its holds are not lost with it."""
    mine = PinnedContent(store).held()
    theirs = set() if team.empty or team.pg is None else set(PgPinnedContent(team.pg).held())
    new = {sid: h for sid, h in mine.items() if sid not in theirs}
    if new and not report.dry_run and team.pg is not None:
        got = PgPinnedContent(team.pg).copy_held(new)      # (another copy may have come first)
        new = {sid: new[sid] for sid in got}
    report.copied["held skills"] += len(new)
    report.already["held skills"] += len(mine) - len(new)


def _pins(rows: LocalRows, team: TeamCopy, report: MigrationReport) -> None:
    _each(report, "pinned roots", rows.pinned_roots(), key="root", states=team.pin_states,
          copy=team.copy_pinned_root,
          same=lambda theirs, pinned: theirs == {s["skill_id"]: s["content_key"] for s in pinned["skills"]},
          why=lambda _: "the team store pins this root with other content: the local pin was not copied "
                        "(`skillshelf trust --root LABEL` on a server re-pins it as that server has it)")


def _trusts(rows: LocalRows, team: TeamCopy, report: MigrationReport) -> None:
    _each(report, "trusts", rows.trusts(), key="skill_id", states=team.trust_states, copy=team.copy_trust,
          same=lambda theirs, t: theirs == t["content_key"],
          why=lambda _: "the team store trusts other content of this skill: the local trust was not copied "
                        "(`skillshelf trust NAME` on a server decides again)")


def _locked_part(document: str) -> list[str]:
    """A source's lock document without the time it was last updated (two libraries that fetched
    the same commit at different times hold the same source)."""
    return [line for line in document.splitlines() if not line.startswith("updated = ")]


def _sources(local: Callable[[], dict[str, str]], team: TeamCopy, report: MigrationReport) -> None:
    try:
        mine = local()
    except SkillshelfError as exc:
        report.leave_out("sources", "skillshelf.lock", f"{exc.message}: {exc.fix}" if exc.fix else exc.message)
        return
    theirs = team.source_documents()
    new: dict[str, str] = {}
    for label, doc in sorted(mine.items()):
        if label not in theirs:
            new[label] = doc
        elif _locked_part(theirs[label]) == _locked_part(doc):     # the same source at the same commit
            report.already["sources"] += 1
        else:
            report.leave_out("sources", label, "the team's lock has a source of this label at another commit or "
                                               "from elsewhere: the local one was not copied (a curator moves the "
                                               "team's with `skillshelf sources update LABEL`)")
    if new and not report.dry_run:
        team.copy_sources(new, expect=theirs)
    report.copied["sources"] += len(new)


# --- the usage log, learning memory and the judge log ------------------------------------------

def _queries(rows: LocalRows, team: TeamCopy, report: MigrationReport) -> None:
    recs = rows.recommendations()
    pending: tuple | None = None
    for page in rows.queries():
        lo, hi = page[0][0], page[-1][0]
        mine: list[tuple] = []
        while True:
            rec = pending if pending is not None else next(recs, None)
            pending = None
            if rec is None:
                break
            if rec[0] > hi:
                pending = rec
                break
            if rec[0] >= lo:
                mine.append(rec)        # (below lo: a recommendation whose query is gone)
        if report.dry_run:
            new = set(team.new_ids("queries", [r[0] for r in page]))
            nq, nr = len(new), sum(1 for r in mine if r[0] in new)
        else:
            nq, nr = team.copy_queries(page, mine)
        report.copied["queries"] += nq
        report.copied["recommendations"] += nr
        report.already["queries"] += len(page) - nq
        report.already["recommendations"] += len(mine) - nr


def _outcomes(rows: LocalRows, team: TeamCopy, report: MigrationReport) -> None:
    for page in rows.outcomes():
        n = len(team.new_ids("outcomes", [r[0] for r in page])) if report.dry_run else team.copy_outcomes(page)
        report.copied["outcomes"] += n
        report.already["outcomes"] += len(page) - n


def _marked(rows: LocalRows, team: TeamCopy, report: MigrationReport, table: str, kind: str,
            pages: Callable[[int], Iterator[list[tuple]]], copy: Callable[[list[tuple]], int]) -> None:
    """Learned reports or judged searches: the rows above the team store's mark."""
    mark = team.mark(table)
    total = rows.count(table)
    for page in pages(mark):
        if report.dry_run:
            report.copied[kind] += len(page)
        else:
            report.copied[kind] += copy(page)
    report.already[kind] += total - report.copied[kind]
