"""A skill's files as the MCP server serves them: only regular files inside the skill
folder, under the size cap, outside dependency and VCS folders; what is listed can be read,
what cannot be read is not listed, and nothing is read whole that is over the cap."""

import hashlib
import os

import anyio
import pytest
from conftest import write_skill
from mcp import Client, MCPError

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.files import MAX_RESOURCE_BYTES
from skillshelf.mcp.server import LibraryHandle, SkillsExtension, _ListParams, build_server


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "h"
    folder = write_skill(h / "skills", "messy-skill", description="A skill folder with everything in it").parent
    (folder / "references").mkdir()
    (folder / "references" / "guide.md").write_text("# Guide\n")
    (folder / "inside-link.md").symlink_to(folder / "references" / "guide.md")
    (folder / "passwd-link").symlink_to("/etc/passwd")                  # leads outside the skill
    with open(folder / "huge.bin", "wb") as f:                           # 300 MB, sparse
        f.truncate(300 * 1024 * 1024)
    os.mkfifo(folder / "pipe")                                           # would block a reader
    for junk in ("node_modules/pkg", ".git/objects", "__pycache__", ".venv/lib"):
        (folder / junk).mkdir(parents=True)
        for i in range(40):
            (folder / junk / f"f{i}.js").write_text("x")
    (folder / ".env").write_text("SECRET=1\n")
    many = write_skill(h / "skills", "many-files", description="A skill with hundreds of files").parent
    (many / "data").mkdir()
    for i in range(260):
        (many / "data" / f"item-{i:03d}.txt").write_text(str(i))
    Library(h, embedder=FakeEmbedder(), auto_sync=False).sync()
    return h


SERVED = ["inside-link.md", "references/guide.md"]


def test_skill_record_files_lists_only_what_can_be_served(home):
    lib = Library(home, embedder="none", auto_sync=False)
    files = lib.get("messy-skill").files()
    assert list(files) == SERVED and files.more == 0 and files.complete
    many = lib.get("many-files").files()
    assert len(many) == 200 and many.more == 60 and many[0] == "data/item-000.txt"


def test_resources_list_get_skill_and_reads_agree(home):
    big = "skill://workspace/messy-skill/huge.bin"

    async def main():
        async with Client(build_server(lambda: Library(home, embedder=FakeEmbedder()))) as c:
            uris, cursor = [], None
            while True:
                page = await c.list_resources(cursor=cursor, cache_mode="bypass")
                uris += [str(r.uri) for r in page.resources]
                if (cursor := page.next_cursor) is None:
                    break
            mine = sorted(u for u in uris if "/messy-skill/" in u)
            assert mine == sorted(["skill://workspace/messy-skill/SKILL.md"]
                                  + [f"skill://workspace/messy-skill/{f}" for f in SERVED])
            assert len([u for u in uris if "/many-files/" in u]) == 261     # every file: no cap
            for u in mine:   # everything listed can be read
                r = await c.read_resource(u)
                assert r.contents[0].text

            # over the cap: refused with the size and the limit, never read (a 300 MB read
            # took the server to 2 GB)
            with pytest.raises(MCPError) as err:
                await c.read_resource(big)
            assert err.value.code == -32602
            assert "314,572,800 bytes" in err.value.message and f"{MAX_RESOURCE_BYTES:,}" in err.value.message
            with anyio.fail_after(5):   # a FIFO is refused, not waited on
                with pytest.raises(MCPError) as err:
                    await c.read_resource("skill://workspace/messy-skill/pipe")
            assert "not a regular file" in err.value.message
            for u in ("passwd-link", ".env", "node_modules/pkg/f1.js", ".git/objects/f0.js"):
                with pytest.raises(MCPError) as err:
                    await c.read_resource(f"skill://workspace/messy-skill/{u}")
                assert err.value.code == -32602, u

            g = await c.call_tool("get_skill", {"name": "messy-skill"})
            assert g.structured_content["files"] == SERVED and g.structured_content["files_more"] == 0
            g = await c.call_tool("get_skill", {"name": "many-files"})
            sc, text = g.structured_content, g.content[0].text
            assert len(sc["files"]) + sc["files_more"] == 260 and len(sc["files"]) < 200
            assert f"({sc['files_more']} more: resources/list)" in text
    anyio.run(main)


def test_skills_extension_digests_are_bounded_reads(home, monkeypatch):
    import skillshelf.files as files

    h = LibraryHandle(lambda: Library(home, embedder="none"))
    ext = SkillsExtension(h)
    read = []
    real = files.read_bounded

    def spy(path, limit=files.MAX_SKILL_BYTES):
        read.append((str(path), limit))
        return real(path, limit)

    monkeypatch.setattr(files, "read_bounded", spy)
    data = anyio.run(lambda: ext._list(None, _ListParams()))
    entry = next(s for s in data["skills"] if s["frontmatter"]["name"] == "messy-skill")
    got = {r["uri"].rsplit("/messy-skill/", 1)[1]: r["digest"].removeprefix("sha256:") for r in entry["resources"]}
    assert sorted(got) == sorted(["SKILL.md", *SERVED])
    guide = home / "skills" / "messy-skill" / "references" / "guide.md"
    assert got["references/guide.md"] == hashlib.sha256(guide.read_bytes()).hexdigest()
    assert read and all(limit == MAX_RESOURCE_BYTES for _, limit in read)
    assert not any(p.endswith(("huge.bin", "pipe")) for p, _ in read)


def test_skills_extension_get_of_an_unknown_skill_is_not_found(home):
    from skillshelf.mcp.server import _GetParams

    ext = SkillsExtension(LibraryHandle(lambda: Library(home, embedder="none")))
    with pytest.raises(MCPError) as err:
        anyio.run(lambda: ext._get(None, _GetParams(uri="skill://workspace/nope/SKILL.md")))
    assert err.value.code == -32602
    got = anyio.run(lambda: ext._get(None, _GetParams(uri="skill://workspace/messy-skill/SKILL.md")))
    assert got["skill"]["frontmatter"]["name"] == "messy-skill"


def test_the_resources_service_on_its_own(tmp_path):
    """resources.SkillResources given what it reads: the URIs of nested skills resolve to the
    innermost skill, what cannot name a file is a ValidationError before any path is built,
    and the listing is read once per index generation."""
    from skillshelf.catalog.resources import SkillResources, skill_uri
    from skillshelf.errors import NotFoundError, ValidationError

    root = tmp_path / "root"
    write_skill(root, "outer", description="the outer skill")
    write_skill(root, "outer/inner", description="a skill inside another")
    (root / "outer" / "notes.md").write_text("outer notes\n")
    (root / "outer" / "inner" / "notes.md").write_text("inner notes\n")
    lib = Library(tmp_path / "h", roots=[root], embedder="none", auto_sync=False)
    lib.sync()
    label = lib.get("outer").root
    recs = {r.id: r for r in lib.list()}
    reads, gen = [], ["1"]

    def active():
        reads.append(1)
        return list(recs.values())

    res = SkillResources(active=active, by_id=recs.get, generation=lambda: gen[0])
    assert res.read_resource(skill_uri(f"{label}:outer/inner", "notes.md")) == (b"inner notes\n", "text/markdown")
    assert res.read_resource(skill_uri(f"{label}:outer", "notes.md"))[0] == b"outer notes\n"
    rec, path = res.resolve(f"skill://{label}/outer/inner/SKILL.md")
    assert rec.name == "inner" and path == root / "outer" / "inner" / "SKILL.md"
    for uri in ("file:///etc/passwd", f"skill://{label}/outer/../outer/SKILL.md", f"skill://{label}/outer/%00",
                f"skill://{label}/outer/a\ud800.md", f"skill://{label}//SKILL.md"):
        with pytest.raises(ValidationError):
            res.resolve(uri)
    for uri in (f"skill://{label}/nope/SKILL.md", f"skill://{label}/outer/missing.md"):
        with pytest.raises(NotFoundError):
            res.resolve(uri)
    for cursor in ("x", "1", "1.x", "9" * 20):
        with pytest.raises(ValidationError):
            res.resource_page(cursor)
    with pytest.raises(ValidationError):
        res.skill_manifests("a")

    page, nxt = res.resource_page(size=2)
    assert len(page) == 2 and nxt == "1.0"      # <skill>.<file>: the next page starts at the second skill
    names = [e["name"] for e in page + res.resource_page(nxt, size=10)[0]]
    assert names == ["inner", "inner/notes.md", "outer", "outer/notes.md"]
    manifests, nxt = res.skill_manifests(size=1)
    assert [m["frontmatter"]["name"] for m in manifests] == ["inner"] and nxt == "1"
    assert len(reads) == 1            # one read of the listing for the pages of one generation
    gen[0] = "2"
    res.skill_manifests()
    assert len(reads) == 2
