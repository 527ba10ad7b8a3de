"""A skill imported held stays held when its folder is renamed, copied or edited, and is held
before its files are written: a rename in the workspace or in the root an import registered, a
copy elsewhere, a renamed folder whose text a person edited, and an import stopped right after
its files were written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_held_restore import SECRET, agent_reads, ok, skill, status

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder


@pytest.fixture(scope="module")
def held_zip(tmp_path_factory) -> Path:
    """An archive whose alpha its library held back from agents (beta is not held)."""
    t = tmp_path_factory.mktemp("held")
    coll, home = t / "coll", t / "h"
    skill(coll, "alpha", "Step one: list the widgets.")
    skill(coll, "beta", "Run the gizmo deploy.")
    ok(home, "sources", "add", str(coll), "--name", "mkt", "--pin")
    skill(home / "sources" / "mkt", "alpha", f"Step one: list the widgets.\n\n{SECRET}")
    ok(home, "sync")
    ok(home, "export", "--all", "--include-held", "--to", str(t / "held.zip"))
    return t / "held.zip"


def held_ids(home: Path) -> dict[str, str]:
    lib = Library(home, embedder=FakeEmbedder(), auto_sync=False)
    try:
        return {sid: h["reason"] for sid, h in lib.supply.held().items()}
    finally:
        lib.close()


def alpha_of(home: Path) -> Path:
    (a,) = [s for s in json.loads(ok(home, "list", "--json")) if s["name"] == "alpha"]
    return Path(a["path"]).parent


def refused(home: Path, name: str = "alpha") -> bool:
    """Whether an agent's get_skill is refused (the refusal never carries the text)."""
    no, text = agent_reads(home, name)
    assert not no or ("EXFILTRATE" not in text and f"skillshelf trust {name}" in text), text
    return no


def test_a_renamed_workspace_folder_stays_held_and_the_old_id_is_let_go(tmp_path, held_zip):
    h = tmp_path / "h"
    ok(h, "import", str(held_zip))
    assert held_ids(h) == {"workspace:alpha": "imported"}
    os.rename(h / "skills" / "alpha", h / "skills" / "alpha-renamed")
    ok(h, "sync")
    assert refused(h)
    assert held_ids(h) == {"workspace:alpha-renamed": "imported"}
    assert status(h)["held"] == 1
    assert not refused(h, "beta")
    ok(h, "trust", "alpha", "--yes")              # a person's review releases it
    assert not refused(h)
    assert held_ids(h) == {}


def test_a_renamed_folder_in_the_root_an_import_registered_stays_held(tmp_path, held_zip):
    h = tmp_path / "h"
    ok(h, "import", str(held_zip), "--as-root")
    folder = alpha_of(h)
    os.rename(folder, folder.with_name("alpha-x"))
    ok(h, "sync")
    assert refused(h)
    (sid,) = held_ids(h)
    assert sid.endswith(":alpha-x")
    assert status(h)["held"] == 1


def test_a_copy_elsewhere_is_held_and_the_original_stays_held(tmp_path, held_zip):
    h, other = tmp_path / "h", tmp_path / "other"
    ok(h, "import", str(held_zip))
    other.mkdir()
    shutil.copytree(h / "skills" / "alpha", other / "alpha")
    ok(h, "roots", "add", str(other))
    ok(h, "sync")
    held = held_ids(h)
    assert set(held) == {"workspace:alpha", "other:alpha"}, held
    assert set(held.values()) == {"imported"}
    # a person's review of that content releases it wherever it is, and a sync does not hold it again
    ok(h, "trust", "workspace:alpha", "--yes")
    ok(h, "sync")
    assert held_ids(h) == {}


def test_a_renamed_folder_whose_text_a_person_edited_stays_held(tmp_path, held_zip):
    h = tmp_path / "h"
    ok(h, "import", str(held_zip))
    os.rename(h / "skills" / "alpha", h / "skills" / "alpha-mine")
    md = h / "skills" / "alpha-mine" / "SKILL.md"
    md.write_text(md.read_text(encoding="utf-8") + "\nA note of mine.\n", encoding="utf-8")
    ok(h, "sync")
    assert refused(h)
    assert held_ids(h) == {"workspace:alpha-mine": "imported"}


def test_a_folder_put_back_stays_held(tmp_path, held_zip):
    h = tmp_path / "h"
    ok(h, "import", str(held_zip))
    shutil.move(h / "skills" / "alpha", tmp_path / "aside")
    ok(h, "sync")
    assert held_ids(h) == {"workspace:alpha": "imported"}     # nothing carries it on: kept
    shutil.move(tmp_path / "aside", h / "skills" / "alpha")
    ok(h, "sync")
    assert refused(h)


class Stop(BaseException):
    """An import stopped (Ctrl-C, a killed process) right after a step."""


def test_an_import_stopped_right_after_the_copy_leaves_the_skill_held(tmp_path, held_zip, monkeypatch):
    h = tmp_path / "h"
    lib = Library(h, embedder=FakeEmbedder(), auto_sync=False)
    real = os.rename

    def rename_then_stop(a, b, *args, **kw):
        real(a, b, *args, **kw)
        if Path(b).name == "alpha" and Path(b).parent == lib.config.workspace:
            raise Stop()

    monkeypatch.setattr(os, "rename", rename_then_stop)
    try:
        with pytest.raises(Stop):
            lib.import_skills(held_zip)
    finally:
        monkeypatch.undo()
        lib.close()
    assert (h / "skills" / "alpha" / "SKILL.md").exists()
    ok(h, "sync")
    assert refused(h)


def test_an_import_as_root_stopped_after_registering_leaves_the_skill_held(tmp_path, held_zip, monkeypatch):
    from skillshelf.onboarding import importer

    h = tmp_path / "h"
    lib = Library(h, embedder=FakeEmbedder(), auto_sync=False)
    real = importer._register_root

    def register_then_stop(lib_, folder):
        real(lib_, folder)
        raise Stop()

    monkeypatch.setattr(importer, "_register_root", register_then_stop)
    try:
        with pytest.raises(Stop):
            lib.import_skills(held_zip, mode="root")
    finally:
        monkeypatch.undo()
        lib.close()
    ok(h, "sync")
    assert refused(h)


def test_a_copy_that_fails_lets_go_of_the_id_held_first(tmp_path, held_zip, monkeypatch):
    from skillshelf.onboarding import importer

    h = tmp_path / "h"
    lib = Library(h, embedder=FakeEmbedder(), auto_sync=False)
    real = importer._stage

    def stage(home, files, executable):
        if any("EXFILTRATE" in data.decode("utf-8", "replace") for data in files.values()):
            raise OSError(28, "No space left on device")
        return real(home, files, executable)

    monkeypatch.setattr(importer, "_stage", stage)
    try:
        report = lib.import_skills(held_zip)
    finally:
        monkeypatch.undo()
        lib.close()
    assert {c.name: c.status for c in report.skills} == {"alpha": "error", "beta": "new"}
    assert held_ids(h) == {}


def test_unpinning_the_root_of_an_imported_held_skill_keeps_it_held(tmp_path, held_zip):
    h = tmp_path / "h"
    ok(h, "import", str(held_zip), "--as-root")
    (sid,) = held_ids(h)
    label = sid.partition(":")[0]
    ok(h, "pin", label)
    ok(h, "unpin", label)
    ok(h, "sync")
    assert held_ids(h) == {sid: "imported"}
    assert refused(h)
