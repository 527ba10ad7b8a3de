"""Export keeps folder names readable (issue 31, item 9): a skill whose folder name is taken
goes into a folder named from its id, cut in the middle (the collection it starts with and the
folders it ends with), never from the left."""

from __future__ import annotations

import json

from conftest import write_skill
from test_cli_entry import sk

DEEP = "external_plugins/partner-built/zoom-plugin/skills/video-sdk/android"


def test_an_exported_folder_named_from_a_long_id_keeps_both_ends(tmp_path):
    home = tmp_path / "home"
    coll = tmp_path / "anthropics__claude-plugins-official"
    write_skill(coll, "android", description="Build Android apps with Gradle")
    write_skill(coll, DEEP, description="Add the Zoom Video SDK to an Android app")
    assert sk("init", home=home).returncode == 0
    assert sk("roots", "add", str(coll), home=home).returncode == 0
    assert sk("sync", home=home).returncode == 0
    p = sk("export", "--all", "--to", str(tmp_path / "out"), "--json", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    folders = {s["id"].split(":", 1)[1]: s["folder"] for s in json.loads(p.stdout)["skills"]}
    assert folders["android"] == "android"
    outer, inner = folders[DEEP].split("/")
    assert inner == "android"
    assert outer.startswith("anthropics-claude-"), outer                   # the collection, from its start
    assert "--zoom-plugin-skills-video-sdk-" in outer, outer              # the skill's own folders
    assert len(outer) <= 60 and (tmp_path / "out" / outer / "android" / "SKILL.md").is_file()
