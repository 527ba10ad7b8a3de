"""Sources against a hostile lock, team-store row or URL: a label that is a path, a commit that is
a git option, a password written into a URL, and sources that are not what they seem (a FIFO, an
empty folder). Run against local bare repositories over ``file://``, as the real console script
where a user stands."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_sources_git import Upstream, sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.errors import SkillshelfError, ValidationError
from skillshelf.net import redact_url
from skillshelf.supply import fetch as fetchmod, lock as lockmod
from skillshelf.supply.sources import Sources

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SECRET = "s3cretTOKEN"


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "up")


def _rewrite_lock(home: Path, **fields: str) -> None:
    """Set fields of the one source of the home's lock, as a hostile hand (or merge) would."""
    p = home / lockmod.LOCK_NAME
    text = p.read_text(encoding="utf-8")
    for key, value in fields.items():
        text, n = re.subn(rf'^{key} = ".*"$', f"{key} = {json.dumps(value)}", text, count=1, flags=re.MULTILINE)
        assert n == 1, key
    p.write_text(text, encoding="utf-8")


def _bare_sources(home: Path, docs: dict[str, str]) -> Sources:
    """A ``Sources`` on a team store that holds ``docs`` (label -> lock document)."""
    class Store:
        def documents(self):
            return docs

        def replace(self, documents, *, expect, by):
            return []

    cfg = SimpleNamespace(home=str(home), roots=[], root_origins={}, workspace=None, client_roots=False)
    # a supply chain with no pins (the lock a team server writes says what its pins say)
    supply = SimpleNamespace(pins=SimpleNamespace(pins=SimpleNamespace(root_labels=lambda: [])))
    src = Sources(lambda: cfg, roots=list, sync=lambda **k: None, supply=supply, records=lambda r: [],
                  evolver=lambda: None, review=lambda: None, unpack=None, locks=Store())
    src._reroot = lambda: None
    return src


# --- 1. a label that is a path ------------------------------------------------------------------

def test_a_lock_whose_label_is_a_path_is_refused_and_nothing_outside_sources_moves(tmp_path, upstream):
    home = tmp_path / "home"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("important\n")
    assert sk(home, "sources", "add", upstream.url, "--name", "team").returncode == 0
    _rewrite_lock(home, label="../../victim")          # home/sources/../../victim is tmp_path/victim
    for args in (["sources", "remove", "../../victim", "--yes"], ["sources", "update", "--yes"],
                 ["sources", "list"]):
        r = sk(home, *args)
        assert r.returncode in (1, 2), (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        assert "'../../victim' cannot be a source's label" in r.stderr and "skillshelf.lock" in r.stderr
    r = sk(home, "sources", "restore", str(home / lockmod.LOCK_NAME))
    assert r.returncode in (1, 2) and "cannot be a source's label" in r.stderr
    assert (victim / "precious.txt").read_text() == "important\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "up", "victim"]


def test_a_team_row_whose_label_is_a_path_moves_and_deletes_nothing(tmp_path, upstream):
    home = tmp_path / "home"
    home.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("important\n")
    skills, _ = lockmod.scan(upstream.work, "x")
    head = fetchmod._out(fetchmod.git(upstream.bare, "rev-parse", "HEAD"))
    entry = lockmod.SourceEntry(label="../../victim", source=upstream.url, kind="git", url=upstream.url,
                                commit=head, skills=skills)
    src = _bare_sources(home, lockmod.documents([entry]))
    with pytest.raises(ValidationError, match=r"team store.*'\.\./\.\./victim' cannot be a source's label"):
        src.shared._follow(None)
    # a row removed that this server had noted as its own: still nothing outside sources/ goes
    src.base.mkdir(parents=True)
    (src.base / ".state.json").write_text(json.dumps({"../../victim": {"team": True, "installed": head}}))
    src.shared.store.documents = dict
    with pytest.raises(ValidationError):
        src.shared._follow(None)
    assert (victim / "precious.txt").read_text() == "important\n"
    assert not (home / "config.toml").exists() or "victim" not in (home / "config.toml").read_text()


@pytest.mark.parametrize("label", ["../x", "a/b", "..", ".", "", "/etc", "x/../../y", "Upper", "user"])
def test_every_path_built_from_a_label_stays_directly_inside_its_folder(tmp_path, label):
    src = _bare_sources(tmp_path, {})
    for build in (src.folder, src._cache, src._bases):
        with pytest.raises(ValidationError, match="cannot be a source's label"):
            build(label)
    assert src.folder("ok-1.x") == tmp_path / "sources" / "ok-1.x"
    assert src._cache("ok") == tmp_path / "sources" / ".git-cache" / "ok.git"


@pytest.mark.parametrize("field, value, needle", [
    ("path", "../../etc", "not a folder inside the source"),
    ("path", "/etc", "not a folder inside the source"),
    ("kind", "weird", "unknown kind"),
])
def test_a_lock_with_a_path_outside_the_source_or_an_unknown_kind_is_refused(tmp_path, upstream, field, value,
                                                                             needle):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "team").returncode == 0
    _rewrite_lock(home, **{field: value})
    r = sk(home, "sources", "update", "--dry-run")
    assert r.returncode in (1, 2) and needle in r.stderr and "Traceback" not in r.stderr


def test_a_skill_or_file_path_leading_out_of_the_source_is_refused():
    text = lockmod.render([lockmod.SourceEntry(
        label="x", source="s", kind="git", url="u", commit="a" * 40,
        skills=[lockmod.SkillEntry("../../elsewhere", [lockmod.FileEntry("SKILL.md", "sha256:0", 1)])])])
    with pytest.raises(ValidationError, match="outside its folder"):
        lockmod.parse(text)
    good = text.replace("../../elsewhere", "skills/alpha")
    assert lockmod.parse(good)[0].skills[0].path == "skills/alpha"


# --- 2. a commit that is a git option ------------------------------------------------------------

@pytest.mark.parametrize("commit, needle", [
    ("--output={target}", "not a commit id"),
    ("abc", "not a commit id"),
    ("g" * 40, "not a commit id"),
])
def test_a_lock_whose_commit_is_a_git_option_is_refused_before_git_runs(tmp_path, upstream, commit, needle):
    home = tmp_path / "home"
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    assert sk(home, "sources", "add", upstream.url, "--name", "team").returncode == 0
    upstream.write("skills/alpha/extra.md", "more\n")
    upstream.commit("second")
    upstream.push()
    _rewrite_lock(home, commit=commit.format(target=target))
    r = sk(home, "sources", "update", "--dry-run")
    assert r.returncode in (1, 2), (r.stdout, r.stderr)
    assert needle in r.stderr and "source team has commit" in r.stderr and "Traceback" not in r.stderr
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "target.txt", "up"]


def test_an_archive_lock_needs_a_sha256():
    text = lockmod.render([lockmod.SourceEntry(label="x", source="s", kind="archive", url="u", commit="a" * 40)])
    with pytest.raises(ValidationError, match=r"not a sha256 \(64 hex digits\)"):
        lockmod.parse(text)
    assert lockmod.parse(text.replace("a" * 40, "b" * 64))[0].commit == "b" * 64


def test_no_git_call_takes_a_revision_as_an_option(tmp_path, upstream):
    """Whatever reaches them, the git calls that take a revision never read it as an option."""
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "team").returncode == 0
    cache = home / "sources" / ".git-cache" / "team.git"
    head = lockmod.read(home / lockmod.LOCK_NAME)[0].commit
    out = tmp_path / "written"
    hostile = f"--output={out}"
    assert fetchmod.changed_paths(cache, hostile, head, "") is None
    assert fetchmod.ahead(cache, hostile, head) is None
    assert fetchmod.is_tree(cache, hostile, "") is False
    assert not list(tmp_path.glob("written*"))
    with pytest.raises(fetchmod.SourceError):
        fetchmod.export(cache, hostile, "", tmp_path / "tree")
    lib = Library(home=home, embedder=FakeEmbedder())
    try:
        entry = lockmod.SourceEntry(**{**lib.sources.entry("team").__dict__, "commit": hostile})
        lib.sources.edits.base_text(entry, "skills/alpha")        # `git show` of the commit, then the folder
    finally:
        lib.close()
    assert not list(tmp_path.glob("written*"))


# --- 3. a password written into a URL ------------------------------------------------------------

def test_redact_url_masks_every_userinfo():
    assert redact_url(f"https://ann:{SECRET}@git.example.com/o/r.git") == "https://***@git.example.com/o/r.git"
    assert redact_url(f"https://{SECRET}@github.com/o/r") == "https://***@github.com/o/r"
    assert redact_url(f"https://ann:{SECRET}@[::1/o/r") == "https://***@[::1/o/r"     # does not parse
    assert redact_url(f"https://ann:pa/{SECRET}@host/o/r") == "https://***@host/o/r"
    assert redact_url("https://github.com/o/r@v1") == "https://github.com/o/r@v1"
    assert redact_url("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert redact_url("/a/local@folder") == "/a/local@folder"


def test_a_password_in_a_sources_url_is_never_printed(tmp_path, upstream):
    home = tmp_path / "home"
    url = f"https://ann:{SECRET}@127.0.0.1:9/team/skills.git"     # nothing listens: the fetch fails
    r = sk(home, "sources", "add", url, "--name", "x")
    assert r.returncode == 1 and "cannot fetch https://***@127.0.0.1:9/team/skills.git" in r.stderr, r.stderr
    assert SECRET not in r.stderr + r.stdout and "Traceback" not in r.stderr

    # a lock that holds one: `sources list` (and its JSON) and an update's error never show it
    assert sk(home, "sources", "add", upstream.url, "--name", "team").returncode == 0
    _rewrite_lock(home, url=url, source=url)
    for args in (["sources", "list"], ["sources", "list", "--json"], ["sources", "update", "--dry-run"]):
        r = sk(home, *args)
        assert SECRET not in r.stdout + r.stderr, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
    assert "***@127.0.0.1:9" in sk(home, "sources", "list").stdout


def test_a_team_servers_failed_fetch_keeps_no_password_in_its_state_or_doctor(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    url = f"https://{SECRET}@127.0.0.1:9/team/skills.git"
    entry = lockmod.SourceEntry(label="coll", source=url, kind="git", url=url, commit="a" * 40)
    src = _bare_sources(home, lockmod.documents([entry]))
    assert src.shared._follow(None) == []
    state = (home / "sources" / ".state.json").read_text()
    assert "cannot fetch https://***@127.0.0.1:9" in state and SECRET not in state
    printed = capsys.readouterr()
    assert "cannot fetch" in printed.err and SECRET not in printed.err + printed.out
    checks = src.shared.checks(src.entries())
    assert checks and all(SECRET not in c.detail for c in checks if hasattr(c, "detail"))
    assert SECRET not in repr(checks)
    # a state written before (a secret already there) is masked when shown
    data = json.loads(state)
    data["coll"]["why"] = f"cannot fetch {url}: refused"
    (home / "sources" / ".state.json").write_text(json.dumps(data))
    assert SECRET not in repr(src.shared.checks(src.entries()))
    # a refused commit names the URL masked too
    data["coll"].update(refused="a" * 40)
    (home / "sources" / ".state.json").write_text(json.dumps(data))
    shown = repr(src.shared.checks(src.entries()))
    assert "https://***@127.0.0.1:9" in shown and SECRET not in shown
    assert all(SECRET not in json.dumps(v) for v in lockmod.parse(lockmod.render([entry]))[0].summary().values())


# --- 4. sources that are not what they seem ------------------------------------------------------

def test_a_fifo_and_an_empty_folder_are_named_for_what_they_are(tmp_path):
    import os

    home = tmp_path / "home"
    fifo = tmp_path / "pipe.zip"
    os.mkfifo(fifo)
    r = sk(home, "sources", "add", str(fifo), timeout=60)
    assert r.returncode in (1, 2) and f"{fifo} is not a regular file" in r.stderr, r.stderr
    assert "does not exist" not in r.stderr and "Traceback" not in r.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    r = sk(home, "sources", "add", str(empty), timeout=60)
    assert r.returncode == 1 and f"{empty} holds no files" in r.stderr, r.stderr
    assert "--path" not in r.stderr and "pass a folder of the archive" not in r.stderr and "Traceback" not in r.stderr
    assert not (home / lockmod.LOCK_NAME).exists()


def test_a_lock_that_is_fine_still_reads(tmp_path, upstream):
    home = tmp_path / "home"
    assert sk(home, "sources", "add", upstream.url, "--name", "team", "--path", "skills").returncode == 0
    got = lockmod.read(home / lockmod.LOCK_NAME)
    assert [(e.label, e.kind, e.path, len(e.commit)) for e in got] == [("team", "git", "skills", 40)]
    assert tomllib.loads((home / lockmod.LOCK_NAME).read_text())["source"][0]["path"] == "skills"
    with pytest.raises(SkillshelfError):
        lockmod.parse((home / lockmod.LOCK_NAME).read_text().replace('path = "skills"', 'path = "../skills"'))
