"""What one MCP answer may weigh: get_skill pages a long body and sends it once,
resources/list pages with a cursor; the server's identity, the prompt and the errors of
resource reads."""

import json

import anyio
import pytest
from conftest import write_skill
from mcp import Client, MCPError

import skillshelf
from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import MAX_RESULT_CHARS, RESOURCES_PAGE, build_server


def _size(result) -> int:
    """Characters the client receives: the text blocks plus the structured content."""
    return sum(len(c.text) for c in result.content) + len(json.dumps(result.structured_content or {}))


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "h"
    ws = h / "skills"
    para = "Run the migration in small steps and check each one before the next. " * 12 + "\n\n"
    body = "".join(f"## Part {i}\n\n" + para * 4 for i in range(80))   # ~290 KB, like the largest real skill
    write_skill(ws, "huge-guide", description="A very long guide to database migrations", body=body)
    for i in range(60):
        write_skill(ws, f"small-{i:02d}", description=f"small skill {i}")
    refs = ws / "small-00" / "references"
    refs.mkdir()
    for i in range(3):
        (refs / f"ref-{i}.md").write_text(f"# ref {i}\n")
    Library(h, embedder=FakeEmbedder(), auto_sync=False).sync()
    return h


def server_for(home):
    return build_server(lambda: Library(home, embedder=FakeEmbedder()))


def test_get_skill_pages_a_long_body_and_sends_it_once(home):
    body = Library(home, embedder="none", auto_sync=False).read("huge-guide")[1]
    assert len(body) > 250_000

    async def main():
        async with Client(server_for(home)) as c:
            parts, offset, calls = [], 0, 0
            while offset is not None:
                r = await c.call_tool("get_skill", {"name": "huge-guide", "offset": offset})
                assert not r.is_error, r.content[0].text
                calls += 1
                assert _size(r) <= MAX_RESULT_CHARS, _size(r)
                sc = r.structured_content
                assert "body" not in sc and sc["offset"] == offset and sc["total_chars"] == len(body)
                text = r.content[0].text
                page = text.split("\n\n", 1)[1]
                if sc["next_offset"] is not None:
                    # the text says how to read on: the same tool with the next offset, or a section
                    hint = f"offset={sc['next_offset']})"
                    assert hint in text and "Part 0" in text
                    page = page.rsplit("\n\n[shown ", 1)[0]
                assert len(page) == sc["shown_chars"]
                parts.append(page)
                offset = sc["next_offset"]
            assert "".join(parts) == body      # nothing lost, nothing repeated
            assert 12 <= calls <= 16

            # a section comes whole when it fits, and the body is still sent once
            s = await c.call_tool("get_skill", {"name": "huge-guide", "section": "Part 3"})
            assert not s.is_error and s.structured_content["next_offset"] is None
            assert s.content[0].text.count("Run the migration") == 48

            bad = await c.call_tool("get_skill", {"name": "huge-guide", "offset": len(body) + 5})
            assert bad.is_error and "next_offset" in bad.content[0].text
            neg = await c.call_tool("get_skill", {"name": "huge-guide", "offset": -1})
            assert neg.is_error
    anyio.run(main)


def test_resources_list_pages_with_a_cursor(home):
    async def main():
        async with Client(server_for(home)) as c:
            uris, cursor, pages = [], None, 0
            while True:
                res = await c.list_resources(cursor=cursor, cache_mode="bypass")
                pages += 1
                assert len(res.resources) <= RESOURCES_PAGE
                assert len(res.model_dump_json(by_alias=True)) < 25_000
                uris += [str(r.uri) for r in res.resources]
                cursor = res.next_cursor
                if cursor is None:
                    break
            # 61 skills + 3 reference files, each once
            assert len(uris) == len(set(uris)) == 64 and pages == 2
            assert "skill://workspace/small-00/references/ref-1.md" in uris
            with pytest.raises(MCPError) as err:
                await c.list_resources(cursor="nonsense", cache_mode="bypass")
            assert err.value.code == -32602 and "cursor" in err.value.message
    anyio.run(main)


def test_server_identity_prompt_and_resource_errors(home):
    async def main():
        async with Client(server_for(home)) as c:
            assert c.server_info.version == skillshelf.__version__
            p = await c.get_prompt("use-skills", {"task": "shrink my docker image"})
            text = p.messages[0].content.text
            assert "The task: shrink my docker image. If a hit fits" in text
            p = await c.get_prompt("use-skills", {"task": "why is it slow?"})
            assert "why is it slow? If a hit fits" in p.messages[0].content.text

            for uri in ("skill://workspace/no-such-skill/SKILL.md", "skill://workspace/small-01/nope.md",
                        "skill://nowhere", "https://example.com/x"):
                with pytest.raises(MCPError) as err:
                    await c.read_resource(uri)
                assert err.value.code == -32602, (uri, err.value.code)   # not found, not internal error
    anyio.run(main)


def test_get_skill_pages_a_body_without_line_breaks_between_words(tmp_path):
    """A long paragraph with no line break near the cut: the page ends after a space, never
    inside a word (it read "...to cle" / "an up")."""
    sentence = "Remember to clean up the temporary files after each run of the migration. "
    body = sentence * 2000   # ~150 KB on one line
    write_skill(tmp_path / "h" / "skills", "one-long-line", description="A guide written as one paragraph",
                body=body)
    home = tmp_path / "h"
    Library(home, embedder=FakeEmbedder(), auto_sync=False).sync()
    whole = Library(home, embedder="none", auto_sync=False).read("one-long-line")[1]

    async def main():
        async with Client(server_for(home)) as c:
            parts, offset = [], 0
            while offset is not None:
                r = await c.call_tool("get_skill", {"name": "one-long-line", "offset": offset})
                assert not r.is_error, r.content[0].text
                sc = r.structured_content
                page = r.content[0].text.split("\n\n", 1)[1]
                if sc["next_offset"] is not None:
                    page = page.rsplit("\n\n[shown ", 1)[0]
                    assert page[-1] == " " and whole[sc["next_offset"]] != " ", page[-30:]
                assert len(page) == sc["shown_chars"]
                parts.append(page)
                offset = sc["next_offset"]
            return parts

    parts = anyio.run(main)
    assert len(parts) >= 5 and "".join(parts) == whole


def test_a_page_cut_prefers_a_line_end_then_a_space():
    from skillshelf.mcp.replies import page_of

    text = "alpha beta\ngamma delta epsilon"
    assert page_of(text, 0, 14) == ("alpha beta\n", 11)            # a line end in the page's second half
    assert page_of(text, 11, 12) == ("gamma delta ", 23)           # else a space
    assert page_of("x" * 50, 0, 20) == ("x" * 20, 20)               # one word longer than the page: cut in it
    assert page_of(text, 0, 100) == (text, None)
