"""Nothing a person wrote is lost: a change made to SKILL.md in an editor becomes a version of
its own (author "edited on disk") before anything else writes the skill, and a deprecation
can be undone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.errors import NotFoundError, ValidationError
from skillshelf.skill import parse

BODY = "## When to Use\n\nwhen\n\n## Solution\n\nold solution\n"
EDIT = "\n## Gotchas\n\nWritten by hand in an editor.\n"


def make(tmp_path: Path, **kw) -> Library:
    kw.setdefault("embedder", "none")
    kw.setdefault("write_policy", "open")
    return Library(home=tmp_path / "home", auto_sync=False, **kw)


def at_v3(lib: Library, name: str = "guide") -> Path:
    lib.save("ARCHIVE", name=name, description="A guide", body=BODY)
    lib.save("FIX", target_skill_name=name, lesson="second lesson")
    lib.save("FIX", target_skill_name=name, lesson="third lesson")
    path = Path(lib.get(name).path)
    assert lib.get(name).version == 3
    return path


def edit_by_hand(path: Path, extra: str = EDIT) -> None:
    path.write_text(path.read_text(encoding="utf-8") + extra, encoding="utf-8")


def history_texts(home: Path, name: str) -> dict[int, str]:
    return {int(p.stem[1:]): p.read_text(encoding="utf-8") for p in (home / "history" / name).glob("v*.md")}


# --- the Python API -----------------------------------------------------------------------------

def test_a_hand_edit_is_a_version_of_its_own_when_history_is_read(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    edit_by_hand(path)
    lib.sync()
    h = lib.evolver.history_of("guide")
    assert h["versions"] == [1, 2] and h["current_version"] == 2
    last = h["changelog"][-1]
    assert (last["action"], last["author"], last["from_version"], last["to_version"]) == \
        ("EDIT", "edited on disk", 1, 2)
    d = lib.evolver.diff("guide", 1, 2)
    assert "+Written by hand in an editor." in d
    assert "Written by hand in an editor." in lib.evolver.version_text("guide", 2)
    # the file says which version it is now; reading again keeps nothing new
    assert parse(path.read_text()).skill.version == 2
    assert lib.evolver.history_of("guide")["versions"] == [1, 2]
    assert len(lib.evolver.history_of("guide")["changelog"]) == 2


def test_rollback_keeps_a_hand_edit_as_a_version_first(tmp_path):
    lib = make(tmp_path)
    path = at_v3(lib)
    edit_by_hand(path)
    res = lib.rollback("guide", 2)
    assert res.version == 5 and "kept first as v4" in res.message
    texts = history_texts(lib.config.home, "guide")
    assert "Written by hand in an editor." in texts[4]              # the edit is kept ...
    assert "Written by hand in an editor." not in path.read_text()  # ... and the file is v2's text
    assert "third lesson" not in texts[5] and "second lesson" in texts[5]
    d = lib.diff("guide", 3, 4)
    assert "+Written by hand in an editor." in d and "lesson" not in d.replace("lesson\n", "")
    actions = [(e["action"], e["from_version"], e["to_version"]) for e in lib.history("guide")["changelog"]]
    assert actions[-2:] == [("EDIT", 3, 4), ("ROLLBACK", 4, 5)]
    lib.rollback("guide", 4)                                         # and it can come back
    assert "Written by hand in an editor." in path.read_text()


def test_an_agent_fix_after_a_hand_edit_is_its_own_change(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    edit_by_hand(Path(lib.get("guide").path))
    res = lib.save("FIX", target_skill_name="guide", lesson="an agent's lesson", author="agent-7")
    assert res.version == 3 and "kept first as v2" in res.message
    agent_change = lib.diff("guide", 2, 3)
    assert "+- v3: an agent's lesson" in agent_change and "+Written by hand" not in agent_change
    assert "+Written by hand in an editor." in lib.diff("guide", 1, 2)
    assert "Written by hand in an editor." in lib.get("guide").body
    log = lib.history("guide")["changelog"]
    assert [(e["action"], e["author"]) for e in log] == [("ARCHIVE", ""), ("EDIT", "edited on disk"),
                                                         ("FIX", "agent-7")]


def test_a_skill_written_outside_skillshelf_gets_a_first_version(tmp_path):
    lib = Library.init(tmp_path / "home", embedder="none", auto_sync=False)
    lib.sync()
    h = lib.evolver.history_of("git-conventional-commits")
    assert h["versions"] == [1]
    assert [(e["action"], e["author"]) for e in h["changelog"]] == [("FOUND", "found on disk")]
    path = Path(lib.get("git-conventional-commits").path)
    sample = path.read_text()
    edit_by_hand(path)
    h = lib.evolver.history_of("git-conventional-commits")
    assert h["versions"] == [1, 2] and h["changelog"][-1]["author"] == "edited on disk"
    lib.rollback("git-conventional-commits", 1)
    assert parse(path.read_text()).skill.body == parse(sample).skill.body


def test_a_first_edit_of_a_skill_without_history_keeps_what_was_found(tmp_path):
    lib = make(tmp_path)
    write_skill(lib.config.workspace, "by-hand", description="Written by hand",
                body="## Steps\n\nfirst text\n")
    lib.sync()
    res = lib.save("FIX", target_skill_name="by-hand", lesson="learned")
    assert res.version == 2
    assert lib.evolver.history_of("by-hand")["versions"] == [1, 2]
    assert "first text" in lib.evolver.version_text("by-hand", 1)


def test_a_hand_edit_that_breaks_the_file_is_kept_byte_for_byte(tmp_path):
    lib = make(tmp_path)
    path = at_v3(lib)
    broken = "---\nname: guide\ndescription: [unclosed\n---\n\nhalf-written by hand\n"
    path.write_text(broken)
    h = lib.evolver.history_of("guide")          # the index has not seen the file since
    assert h["versions"] == [1, 2, 3, 4] and h["changelog"][-1]["author"] == "edited on disk"
    assert history_texts(lib.config.home, "guide")[4] == broken
    assert path.read_text() == broken             # a file that does not parse is not rewritten
    path.write_text(history_texts(lib.config.home, "guide")[3] + EDIT)    # repaired by hand, from v3
    lib.sync()
    h = lib.evolver.history_of("guide")
    assert h["versions"] == [1, 2, 3, 4, 5] and h["current_version"] == 5
    assert "+Written by hand in an editor." in lib.evolver.diff("guide", 3, 5)


def test_a_version_number_a_person_raised_is_kept_as_written(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    text = path.read_text().replace("version: '1'", "version: '2'") + EDIT
    assert "version: '2'" in text
    path.write_text(text)
    h = lib.evolver.history_of("guide")
    assert h["versions"] == [1, 2] and path.read_text() == text
    assert history_texts(lib.config.home, "guide")[2] == text


def test_a_version_number_raised_without_a_change_leaves_no_gap(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    path.write_text(path.read_text().replace("version: '1'", "version: '2'"))
    lib.sync()
    lib.deprecate("guide", "replaced")
    assert lib.history("guide")["versions"] == [1, 2, 3]
    lib.rollback("guide", 2)
    assert lib.history("guide")["versions"] == [1, 2, 3, 4]


def test_a_file_saved_again_unchanged_is_not_a_new_version(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    path.write_text(path.read_text())                 # an editor's save without a change
    lib.save("FIX", target_skill_name="guide", lesson="next")
    assert lib.history("guide")["versions"] == [1, 2]
    assert [e["action"] for e in lib.history("guide")["changelog"]] == ["ARCHIVE", "FIX"]


def test_deprecate_keeps_a_hand_edit_first(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    edit_by_hand(Path(lib.get("guide").path))
    lib.deprecate("guide", "replaced")
    log = lib.history("guide")["changelog"]
    assert [e["action"] for e in log] == ["ARCHIVE", "EDIT", "INACTIVE"]
    assert "Written by hand in an editor." in lib.evolver.version_text("guide", 2)
    assert "Written by hand in an editor." in Path(lib.get("guide").path).read_text()


def test_history_still_reads_when_a_change_on_disk_cannot_be_kept(tmp_path):
    import errno

    from skillshelf.evolution.evolve import Evolver

    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    edit_by_hand(Path(lib.get("guide").path))

    def read_only_lock(*keys):
        raise OSError(errno.EROFS, "Read-only file system")

    h = Evolver(lib._ports(), lock=read_only_lock).history_of("guide")
    assert h["versions"] == [1] and "could not be kept" in h["note"] and "Read-only" in h["note"]
    with pytest.raises(NotFoundError, match="has no version 2"):
        Evolver(lib._ports(), lock=read_only_lock).diff("guide", 1, 2)


# --- the CLI, as a person runs it ------------------------------------------------------------------

def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SKILLSHELF_EMBEDDER": "none"}
    return subprocess.run([sys.executable, "-m", "skillshelf.entry", "--home", str(home), *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_cli_rollback_keeps_a_hand_edit(tmp_path):
    lib = make(tmp_path)
    path = at_v3(lib)
    lib.close()
    edit_by_hand(path)
    home = tmp_path / "home"
    r = cli(home, "rollback", "guide", "2")
    assert r.returncode == 0, r.stderr
    assert "v5" in r.stdout and "kept first as v4" in r.stdout
    r = cli(home, "history", "guide")
    assert r.returncode == 0, r.stderr
    assert "current v5; versions kept: v1, v2, v3, v4, v5" in r.stdout
    assert "EDIT" in r.stdout and "ROLLBACK" in r.stdout
    r = cli(home, "diff", "guide", "3", "4")
    assert r.returncode == 0, r.stderr
    assert "+Written by hand in an editor." in r.stdout


def test_cli_history_shows_a_hand_edit_as_a_version(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    lib.close()
    edit_by_hand(path)
    home = tmp_path / "home"
    r = cli(home, "history", "guide")
    assert r.returncode == 0, r.stderr
    assert "current v2; versions kept: v1, v2" in r.stdout and "EDIT" in r.stdout
    r = cli(home, "diff", "guide", "1", "2")
    assert r.returncode == 0, r.stderr
    assert "+Written by hand in an editor." in r.stdout


# --- a deprecation can be undone --------------------------------------------------------------------

def test_restore_undoes_a_deprecation_of_a_workspace_skill(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    lib.deprecate("guide", "replaced by something")
    assert lib.get("guide").active is False
    res = lib.evolver.restore("guide")
    assert res["status"] == "active" and res["version"] == 3 and "active again" in res["message"]
    rec = lib.get("guide")
    assert rec.active is True and rec.version == 3
    meta = parse(Path(rec.path).read_text()).skill.metadata
    assert "status" not in meta and "status-reason" not in meta
    log = lib.history("guide")["changelog"]
    assert [e["action"] for e in log] == ["ARCHIVE", "INACTIVE", "RESTORE"]
    with pytest.raises(ValidationError, match="not deprecated"):
        lib.evolver.restore("guide")


def test_restore_brings_back_a_skill_a_merge_retired(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="one-skill", description="One", body=BODY)
    lib.save("ARCHIVE", name="two-skill", description="Two", body=BODY)
    lib.save("MERGE", name="both-skills", source_skill_names="one-skill, two-skill", description="Both")
    assert lib.get("one-skill").active is False
    lib.evolver.restore("one-skill")
    rec = lib.get("one-skill")
    assert rec.active is True and "merged-into" not in rec.metadata


def test_restore_clears_the_overlay_of_a_read_only_skill(tmp_path):
    root = tmp_path / "root"
    src = write_skill(root, "cors-fix", description="Fix CORS errors in API routes")
    before = src.read_bytes()
    lib = make(tmp_path, roots=[root])
    lib.sync()
    lib.deprecate("cors-fix", "we use a proxy now")
    res = lib.evolver.restore("cors-fix")
    assert res["status"] == "active" and "untouched" in res["message"]
    assert (lib.get("cors-fix").overlay or {}).get("status") is None
    assert src.read_bytes() == before and not (lib.config.workspace / "cors-fix").exists()
    with pytest.raises(ValidationError, match="not deprecated"):
        lib.evolver.restore("cors-fix")


def test_a_restored_read_only_skill_is_active_again(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "cors-fix", description="Fix CORS errors in API routes")
    lib = make(tmp_path, roots=[root])
    lib.sync()
    lib.deprecate("cors-fix", "we use a proxy now")
    lib.evolver.restore("cors-fix")
    assert lib.get("cors-fix").active is True


def test_a_read_only_skill_inactive_by_its_own_file_cannot_be_restored_here(tmp_path):
    root = tmp_path / "root"
    write_skill(root, "old-skill", description="Old", extra="metadata:\n  status: inactive\n")
    lib = make(tmp_path, roots=[root])
    lib.sync()
    assert lib.get("old-skill").active is False
    with pytest.raises(ValidationError, match="its own file") as exc:
        lib.evolver.restore("old-skill")
    assert "FIX" in (exc.value.fix or "")
