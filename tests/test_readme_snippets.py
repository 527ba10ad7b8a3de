"""What the README tells a new user to type works where they type it: a client starts the
server without the virtual environment, so no snippet puts a bare `skillshelf` in a client's
settings without saying how to get the absolute path; the team section says to install the
driver and which of two entries named `skillshelf` to keep."""

from __future__ import annotations

import json
import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the README's section ``## title`` (up to the next ``## ``)."""
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end >= 0 else len(README)]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_no_client_entry_in_the_readme_runs_a_bare_skillshelf():
    """JSON entries name the absolute path; `claude mcp add` lines resolve it in the shell."""
    entries = 0
    for block in _blocks(README, "json"):
        data = json.loads(block)
        for table in ("mcpServers", "servers"):
            for name, entry in data.get(table, {}).items():
                if "command" in entry:
                    entries += 1
                    assert entry["command"] != "skillshelf", (name, entry)
                    assert entry["command"].startswith("/"), (name, entry)
    assert entries >= 2
    adds = [line for block in _blocks(README, "bash") for line in block.splitlines()
            if line.startswith("claude mcp add") and "--transport http" not in line]
    assert adds
    for line in adds:
        run = line.split(" -- ", 1)[1]
        assert not run.startswith("skillshelf "), line
        assert run.startswith('"$(command -v skillshelf)"'), line


def test_the_readme_says_why_and_how_to_get_the_entry_right():
    text = _section("Connecting agents (MCP)")
    assert "skillshelf install --print CLIENT" in text
    assert "without the virtual" in text and "absolute path" in text
    assert "pipx install ." in text and "uv tool install ." in text and "uvx" in text
    # which entry to keep when there are two
    assert "conflicting scopes" in text and "claude mcp remove --scope local skillshelf" in text


def test_the_team_section_says_to_install_the_driver_and_which_entry_to_keep():
    text = _section("Team server")
    assert "pip install -e '.[team]'" in text and "pip install 'skillshelf[team]'" in text
    assert "conflicting scopes" in text and "skillshelf uninstall claude-code" in text
    # a curator's save through MCP is a draft under propose: how it is approved
    assert "curator" in text and "review approve NAME" in text and "Review page" in text
    # two servers embedded everything twice; now the vectors are shared through the store, and it says so
    assert "A team embeds once" in text and "embed everything twice" not in text


def test_the_set_up_says_how_long_the_tests_take():
    text = _section("Set-up: two commands")
    assert re.search(r"about 10 minutes on a\s+quiet 2-core\s+machine and 15 or more on a busy one", text), text
