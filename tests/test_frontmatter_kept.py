"""A change writes only the keys it sets (issue 31, item 8): an agent's FIX over MCP keeps the
frontmatter as written (quotes, dates, comments, the author) and records who changed it in
the changelog; rolling a fork back to its first version keeps where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from conftest import write_skill
from mcp import Client
from test_cli_entry import sk

from skillshelf import Library
from skillshelf.embeddings.fake import FakeEmbedder
from skillshelf.mcp.server import build_server

HEAD = """---
name: release-checklist
description: "Cut a release: tag, build and publish the packages"
license: Apache-2.0
metadata:
  skill-type: WORKFLOW
  version: "1"   # numbered by hand
  tags: release, packaging
  created: 2026-01-15
  author: skillshelf
---
"""
BODY = "\n# Release checklist\n\n## Steps\n\nTag, build, publish.\n"


def _frontmatter(text: str) -> list[str]:
    return text.split("---\n")[1].splitlines()


def _fix_over_mcp(home: Path, args: dict) -> dict:
    server = build_server(lambda: Library(home, write_policy="open", embedder=FakeEmbedder()))

    async def main():
        async with Client(server) as c:
            r = await c.call_tool("save_skill", {"action": "FIX", **args})
            assert not r.is_error, r.content[0].text
            return r.structured_content

    return anyio.run(main)


def test_a_fix_changes_only_the_keys_it_sets(tmp_path):
    home = tmp_path / "home"
    assert sk("init", home=home).returncode == 0
    md = home / "skills" / "release-checklist" / "SKILL.md"
    md.parent.mkdir(parents=True)
    md.write_text(HEAD + BODY, encoding="utf-8")
    assert sk("sync", home=home).returncode == 0
    before = _frontmatter(md.read_text())

    res = _fix_over_mcp(home, {"target_skill_name": "release-checklist", "author": "agent",
                               "lesson": "Publish the wheel before the sdist"})
    assert res["version"] == 2
    text = md.read_text()
    after = _frontmatter(text)
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert changed == [('  version: "1"   # numbered by hand', '  version: "2"   # numbered by hand')], after
    assert after[:len(before)][-1] == "  author: skillshelf"
    assert [x.split(":")[0] for x in after[len(before):]] == ["  last-modified"], after
    assert "Publish the wheel before the sdist" in text and "Tag, build, publish." in text
    # who changed it is in the changelog
    p = sk("history", "release-checklist", "--json", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["changelog"][-1]["author"] == "agent"


def test_rolling_a_fork_back_keeps_where_it_came_from(tmp_path):
    home, vendor = tmp_path / "home", tmp_path / "vendor"
    write_skill(vendor, "release-checklist", description="Cut a release, then tag and publish",
                body="## Steps\n\nTag, build, publish.\n")
    assert sk("init", home=home).returncode == 0
    assert sk("roots", "add", str(vendor), home=home).returncode == 0
    assert sk("sync", home=home).returncode == 0
    res = _fix_over_mcp(home, {"target_skill_name": "vendor:release-checklist", "lesson": "Sign the tag"})
    assert res["version"] == 2
    p = sk("show", "workspace:release-checklist", "--json", home=home)
    assert json.loads(p.stdout)["metadata"]["origin"] == "vendor:release-checklist"

    p = sk("rollback", "workspace:release-checklist", "1", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    p = sk("show", "workspace:release-checklist", "--json", home=home)
    shown = json.loads(p.stdout)
    assert shown["version"] == 3 and "Sign the tag" not in shown["body"]
    assert shown["metadata"]["origin"] == "vendor:release-checklist"
