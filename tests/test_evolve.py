import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import ConflictError, NotFoundError, PolicyError, ValidationError, WriteError
from skillshelf.evolution.evolve import merge_lessons

BODY = "# Title\n\n## When to Use\n\nwhen\n\n## Solution\n\nold solution\n\n## Lessons Learned\n\n- v1: first lesson\n"


def make(tmp_path, policy="open", **kw):
    lib = Library(home=tmp_path / "h", roots=kw.pop("roots", None), embedder=kw.pop("embedder", FakeEmbedder()),
                  auto_sync=False, write_policy=policy, **kw)
    lib.sync()
    return lib


def test_archive_creates_valid_v1_with_changelog(tmp_path):
    lib = make(tmp_path)
    r = lib.save("ARCHIVE", name="fix-flaky-docker", description="Fix flaky Docker builds", body="## Solution\n\npin\n",
                 skill_type="troubleshooting", tags="docker, ci", lesson="pin the base image", reason="seen twice")
    assert r.status == "saved" and r.version == 1
    rec = lib.get("fix-flaky-docker")
    assert rec.kind == "workspace" and rec.skill_type == "TROUBLESHOOTING" and rec.tags == ["docker", "ci"]
    assert "- v1: pin the base image" in rec.body
    assert lib.history("fix-flaky-docker")["changelog"][0]["reason"] == "seen twice"
    assert Library.validate_paths([rec.path])[0][1] == []  # what we write passes validation
    with pytest.raises(ConflictError):
        lib.save("ARCHIVE", name="fix-flaky-docker", description="again", body="x")


def test_fix_merges_lessons_and_keeps_unsent_sections(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    r = lib.save("FIX", target_skill_name="guide", body="## Solution\n\nnew solution\n", lesson="second lesson")
    assert r.version == 2
    body = lib.get("guide").body
    assert "new solution" in body and "old solution" not in body
    assert "## When to Use" in body and body.index("When to Use") < body.index("Solution")
    assert "- v1: first lesson" in body and "- v2: second lesson" in body
    assert body.count("## Lessons Learned") == 1
    with pytest.raises(ValidationError, match="leaves guide as it is"):  # the same lesson again: no new version
        lib.save("FIX", target_skill_name="guide", lesson="second lesson", author="agent")
    assert lib.get("guide").body.count("second lesson") == 1 and lib.get("guide").version == 2
    with pytest.raises(ValidationError):
        lib.save("FIX", name="", target_skill_name="")


def test_merge_lessons_no_duplicate_markers():
    out = merge_lessons(["- v1: a", "- v2: b"], ["- v2: b", "- c"], "v3: d", 3)
    assert out == ["- v1: a", "- v2: b", "- c", "- v3: d"]


def test_derive_and_merge_lineage(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="parent-skill", description="Parent", body=BODY, tags="a")
    lib.save("DERIVE", name="child-skill", target_skill_name="parent-skill", description="Child", tags="b")
    assert lib.get("parent-skill").version == 1  # parent untouched
    assert lib.get("child-skill").lineage == ["parent-skill"]
    lib.save("DERIVE", name="grandchild", target_skill_name="child-skill")
    assert lib.get("grandchild").lineage == ["parent-skill", "child-skill"]
    hit = [h for h in lib.search("Child", log=False).hits if h.name == "grandchild"]
    assert hit and hit[0].lineage == ["parent-skill", "child-skill"]
    r = lib.save("MERGE", name="merged-skill", source_skill_names="parent-skill, child-skill", description="Both")
    assert r.version == 1
    m = lib.get("merged-skill")
    assert set(m.tags) >= {"a", "b"} and "first lesson" in m.body
    assert not lib.get("parent-skill").active and not lib.get("child-skill").active  # kept, deactivated
    assert Path(lib.get("parent-skill").path).exists()
    with pytest.raises(ValidationError):
        lib.save("MERGE", name="x-y", source_skill_names="parent-skill")


def test_read_only_roots_are_never_modified(tmp_path):
    root = tmp_path / "ro"
    p = write_skill(root, "shared-tip", description="A shared tip", body=BODY)
    before = p.read_bytes()
    lib = make(tmp_path, roots=[root])
    r = lib.save("FIX", target_skill_name="shared-tip", lesson="local lesson")
    assert p.read_bytes() == before
    rec = lib.get("shared-tip")
    assert rec.kind == "workspace" and rec.metadata["origin"] == "ro:shared-tip" and r.version == 2
    lib.save("DERIVE", name="my-variant", target_skill_name="ro:shared-tip")
    assert p.read_bytes() == before


def test_history_diff_rollback(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    lib.save("FIX", target_skill_name="guide", body="## Solution\n\nsecond\n")
    lib.save("FIX", target_skill_name="guide", body="## Solution\n\nthird\n")
    h = lib.history("guide")
    assert h["versions"] == [1, 2, 3] and [e["to_version"] for e in h["changelog"]] == [1, 2, 3]
    d = lib.diff("guide", 2, 3)
    assert "-second" in d and "+third" in d
    r = lib.rollback("guide", 1)
    assert r.version == 4 and "old solution" in lib.get("guide").body
    with pytest.raises(NotFoundError):
        lib.diff("guide", 1, 9)


def _fix_worker(home: str, n: int, tag: int) -> None:
    lib = Library(home=home, embedder="none", auto_sync=False, write_policy="open")
    for i in range(n):
        lib.save("FIX", target_skill_name="shared", lesson=f"lesson from worker {tag} number {i}")


def test_concurrent_writers_keep_versions_contiguous(tmp_path):
    lib = make(tmp_path, embedder="none")
    lib.save("ARCHIVE", name="shared", description="Shared", body=BODY)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_fix_worker, args=(str(tmp_path / "h"), 4, t)) for t in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    lib.sync()
    rec = lib.get("shared")
    assert rec.version == 13
    h = lib.history("shared")
    assert h["versions"] == list(range(1, 14))
    assert sorted(e["to_version"] for e in h["changelog"]) == list(range(1, 14))
    for t in range(3):
        for i in range(4):
            assert f"lesson from worker {t} number {i}" in rec.body  # no update lost


def test_failed_write_leaves_old_file(tmp_path, monkeypatch):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY)
    path = Path(lib.get("guide").path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)  # skillshelf.files uses os.replace
    with pytest.raises(WriteError, match="No space left on device.*free some disk space"):
        lib.save("FIX", target_skill_name="guide", lesson="never lands")
    assert path.read_bytes() == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("name", ["../escape", "a/b", "/abs", "..", "con", "Ⅽors-fix", "cörs", "bad name",
                                  "-x", "x" * 70, ""])
def test_bad_names_refused(tmp_path, name):
    lib = make(tmp_path)
    with pytest.raises(ValidationError):
        lib.save("ARCHIVE", name=name, description="d", body="b")
    assert not (tmp_path / "escape").exists()


def test_bad_bodies_refused(tmp_path):
    lib = make(tmp_path, max_body_bytes=1000)
    with pytest.raises(ValidationError, match="empty"):
        lib.save("ARCHIVE", name="a-skill", description="d", body="  \n")
    with pytest.raises(ValidationError, match="frontmatter"):
        lib.save("ARCHIVE", name="a-skill", description="d", body="---\nname: x\n---\nbody")
    with pytest.raises(ValidationError, match="limit") as err:
        lib.save("ARCHIVE", name="a-skill", description="d", body="x" * 2000)
    # the fix is one an agent can follow with save_skill (it writes no reference files)
    assert "shorter body" in err.value.fix and "references/" not in err.value.fix
    with pytest.raises(ValidationError, match="action"):
        lib.save("EXPLODE", name="a-skill", description="d", body="b")


def test_ttl_deprecate_delete(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="short-lived", description="Short", body=BODY, ttl_days=5)
    rec = lib.get("short-lived")
    assert rec.expires_on and not rec.expired
    lib.extend_ttl("short-lived", 30)
    assert lib.get("short-lived").expires_on > rec.expires_on
    lib.deprecate("short-lived", "superseded")
    assert not lib.get("short-lived").active
    assert lib.search("Short", log=False).hits == [] or all(h.name != "short-lived" for h in lib.search("Short", log=False).hits)
    lib.delete("short-lived")
    with pytest.raises(NotFoundError):
        lib.get("short-lived")
    assert not (tmp_path / "h" / "skills" / "short-lived").exists()


def test_write_policies(tmp_path):
    ro = make(tmp_path / "a", policy="read-only")
    with pytest.raises(PolicyError):
        ro.save("ARCHIVE", name="x-skill", description="d", body="b")
    lib = make(tmp_path / "b", policy="propose")
    r = lib.save("ARCHIVE", name="proposed-skill", description="d", body="## Solution\n\nb\n", reason="new")
    assert r.status == "draft"
    with pytest.raises(NotFoundError):
        lib.get("proposed-skill")  # drafts are kept apart from live skills
    assert [d["name"] for d in lib.review.list()] == ["proposed-skill"]
    assert "name: proposed-skill" in lib.review.show("proposed-skill")["text"]
    res = lib.review.approve("proposed-skill", reviewer="me")
    assert res.status == "saved" and lib.get("proposed-skill").version == 1
    lib.save("FIX", target_skill_name="proposed-skill", lesson="maybe")
    lib.review.reject("proposed-skill", "not true")
    assert lib.review.list() == [] and "maybe" not in lib.get("proposed-skill").body
    rejected = (tmp_path / "b" / "h" / "drafts" / "rejected.jsonl").read_text()
    assert json.loads(rejected)["reason"] == "not true"


def test_duplicate_warning_after_archive(tmp_path):
    lib = make(tmp_path, duplicate_threshold=0.8)
    lib.save("ARCHIVE", name="cors-nextjs", description="Fix CORS errors in Next.js API routes", body="b")
    r = lib.save("ARCHIVE", name="nextjs-cors", description="Fix CORS errors in Next.js API routes", body="c")
    assert r.duplicates and r.duplicates[0]["name"] == "cors-nextjs" and "MERGE" in r.duplicates[0]["suggestion"]


def test_a_person_edit_can_replace_the_whole_body_and_is_stamped_as_theirs(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="guide", description="A guide", body=BODY, by="person")
    assert lib.get("guide").metadata["source"] == "person"
    lib.save("FIX", target_skill_name="guide", body="## Solution\n\nonly this now\n", replace_body=True, by="person")
    body = lib.get("guide").body
    assert "When to Use" not in body and "first lesson" not in body and "only this now" in body
    lib.save("FIX", target_skill_name="guide", body="## Extra\n\nmore\n")     # an agent's FIX merges sections
    assert "only this now" in lib.get("guide").body and "## Extra" in lib.get("guide").body
    lib.save("ARCHIVE", name="by-agent", description="d", body=BODY)
    assert lib.get("by-agent").metadata["source"] == "agent"


def test_lessons_a_merge_carries_say_whose_version_learned_them(tmp_path):
    """A merged skill's v2 lesson must not read like a lesson its sources learned at their v2."""
    lib = make(tmp_path)
    for n in ("tz-jest", "tz-pytest"):
        lib.save("ARCHIVE", name=n, description=f"Time zones in {n}", body="## Fix\n\nTZ=UTC\n", lesson=f"{n} starts")
        lib.save("FIX", target_skill_name=n, lesson=f"{n} needs the runner's TZ too")
    lib.save("MERGE", name="tz-tests", source_skill_names="tz-jest, tz-pytest", description="Time zones in tests")
    lib.save("FIX", target_skill_name="tz-tests", lesson="Windows runners need tzutil")
    lines = [x for x in lib.get("tz-tests").body.splitlines() if x.startswith("- ")]
    assert "- (from tz-jest v2) tz-jest needs the runner's TZ too" in lines, lines
    assert "- (from tz-pytest v1) tz-pytest starts" in lines, lines
    assert [x for x in lines if x.startswith("- v2:")] == ["- v2: Windows runners need tzutil"], lines
    # a carried lesson sent again is recognised as one the skill has
    with pytest.raises(ValidationError, match="leaves tz-tests as it is"):
        lib.save("FIX", target_skill_name="tz-tests", lesson="tz-jest needs the runner's TZ too")


@pytest.mark.parametrize("body, kept", [
    ("## Steps\n\nDo it.\n\n## Notes\n\nSome.\n\n### Lessons Learned\n\n- v1: old lesson\n", "### Lessons"),
    ("## Steps\n\nA fence starts with:\n\n    ```\n\nThen text.\n\n## Lessons Learned\n\n- v1: old lesson\n", None),
    ("## Steps\n\n1. Run:\n\n    ```bash\n    make\n    ```\n\n## Lessons Learned\n\n- v1: old lesson\n", None),
])
def test_two_fixes_keep_one_lessons_section_with_every_lesson(tmp_path, body, kept):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="odd-body", description="A body written by hand", body=body)
    for lesson in ("second lesson", "third lesson"):
        lib.save("FIX", target_skill_name="odd-body", lesson=lesson)
    out = lib.get("odd-body").body
    assert out.count("Lessons Learned") == 1, out
    assert all(x in out for x in ("old lesson", "- v2: second lesson", "- v3: third lesson")), out
    if kept:
        assert kept not in out           # the nested heading went with the others


def test_a_fix_of_a_body_with_a_fence_never_closed_is_refused_naming_it(tmp_path):
    lib = make(tmp_path)
    lib.save("ARCHIVE", name="open-fence", description="A body with an open fence",
             body="## Steps\n\nRun it.\n")
    with pytest.raises(ValidationError, match="never closed") as err:
        lib.save("FIX", target_skill_name="open-fence", body="## Steps\n\n```bash\nmake\n``` end\n", lesson="x")
    assert "close the fence" in err.value.fix
    assert lib.get("open-fence").version == 1
