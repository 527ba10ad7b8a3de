"""Small things a newcomer hits on a first run, each checked the way they met it: mostly the
real ``skillshelf`` console script as a subprocess, with an empty HOME."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest import write_skill
from test_cli_entry import sk

from skillshelf import skill


@pytest.fixture
def newcomer(tmp_path: Path) -> dict:
    """The environment of someone who never ran skillshelf: an empty HOME."""
    (tmp_path / "user").mkdir()
    return {"HOME": str(tmp_path / "user")}


# --- demo ------------------------------------------------------------------------------------

def test_the_demo_names_the_form_of_home_that_works(tmp_path, newcomer):
    p = sk("demo", env=newcomer, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "run `skillshelf --home DIR demo` to keep one" in p.stdout
    assert "pass --home DIR" not in p.stdout
    # the form the demo names is the one that works; the other is a usage error
    kept = tmp_path / "kept"
    assert sk("--home", str(kept), "demo", env=newcomer, timeout=180).returncode == 0
    p = sk("demo", "--home", str(tmp_path / "other"), env=newcomer)
    assert p.returncode == 2 and "put it before the command" in p.stderr


def test_the_demo_runs_again_on_a_library_where_it_ran(tmp_path, newcomer):
    home = tmp_path / "demo-home"
    first = sk("--home", str(home), "demo", env=newcomer, timeout=180)
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert "FIX cors-fix-nextjs-api: version 2" in first.stdout
    p = sk("--home", str(home), "demo", env=newcomer, timeout=180)
    assert p.returncode == 0, p.stderr
    # nothing of the MCP SDK's own log (a Rich-formatted INFO line per failed tool) on stderr
    assert p.stderr == "", p.stderr
    out = p.stdout
    assert "error:" not in out and "no draft" not in out, out
    step4 = out[out.index("[4/6]"):out.index("[5/6]")]
    assert "cors-fix-nextjs-api already holds this lesson" in step4 and "save_skill" not in step4
    assert "approved in an earlier run" in out[out.index("[5/6]"):out.index("[6/6]")]
    assert "2 queries, 2 reports" in out and "the whole loop took" in out
    text = (home / "skills" / "cors-fix-nextjs-api" / "SKILL.md").read_text()
    assert text.count("Exclude OPTIONS from auth middleware") == 1
    assert 'version: "2"' in text or "version: '2'" in text


def test_a_demo_step_that_fails_fails_the_demo(tmp_path, newcomer):
    """A draft for the same skill already waiting (an agent's, say): the demo's save is
    refused; the demo says which step failed and exits 1, and the SDK logs nothing."""
    from skillshelf import Library

    home = tmp_path / "demo-home"
    assert sk("init", home=home, env=newcomer).returncode == 0
    lib = Library(home=home, embedder="none", write_policy="propose", auto_sync=False)
    # (a lesson alone would join a FIX draft waiting: a MERGE into the skill is one it cannot join)
    lib.save("MERGE", name="cors-fix-nextjs-api", source_skill_names="cors-fix-nextjs-api, docker-multi-stage-build",
             reason="r")
    lib.close()
    p = sk("--home", str(home), "demo", env=newcomer, timeout=180)
    assert p.returncode == 1, p.stdout
    assert "already waiting for review" in p.stdout
    assert "(no draft to approve: step 4 failed)" in p.stdout
    assert p.stderr.strip().splitlines() == [
        "error: the demo failed at step 4 (see above) — fix what the error names and run the demo again"]


@pytest.fixture
def mcp_log_level():
    logger = logging.getLogger("mcp")
    level = logger.level
    yield
    logger.setLevel(level)


def test_the_demo_keeps_our_own_errors_and_drops_the_sdk_chatter(tmp_path, monkeypatch, caplog, mcp_log_level):
    """In process: a tool that breaks is logged by skillshelf (with its traceback) and shown
    in its step; the SDK's INFO line about the failed tool is not emitted."""
    from skillshelf import cli
    from skillshelf.library import Library

    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")

    def broken(self, *a, **kw):
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(Library, "stats", broken)
    caplog.set_level(logging.DEBUG)
    assert cli.run(["--home", str(tmp_path / "h"), "demo"]) == 1
    ours = [r for r in caplog.records if r.name.startswith("skillshelf")]
    assert any(r.levelno == logging.ERROR and r.exc_info for r in ours)
    sdk = [r for r in caplog.records if r.name.startswith("mcp")]
    assert not [r for r in sdk if r.levelno < logging.WARNING], [r.getMessage() for r in sdk]


# --- config ----------------------------------------------------------------------------------

def test_config_masks_only_credentials(tmp_path, newcomer):
    env = newcomer | {"SKILLSHELF_HTTP_TOKEN": "s3cret-token", "SKILLSHELF_JUDGE_API_KEY": "judge-key",
                      "SKILLSHELF_EMBEDDER_API_KEY": "emb-key"}
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / "config.toml").write_text('[judge]\ntokenizer_path = "/models/tokenizer.json"\n')
    p = sk("config", "--json", home=tmp_path / "h", env=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["search.body_vector_tokens"]["value"] == 128
    assert data["judge.tokenizer_path"]["value"] == "/models/tokenizer.json"
    for key in ("http_token", "judge.api_key", "embedder_api_key"):
        assert data[key]["value"] == "***", key
    assert "s3cret" not in p.stdout and "judge-key" not in p.stdout and "emb-key" not in p.stdout
    p = sk("config", home=tmp_path / "h", env=env)
    row = next(line for line in p.stdout.splitlines() if line.split()[:1] == ["search.body_vector_tokens"])
    assert row.split()[1] == "128"


def test_secret_settings_are_named_precisely():
    from skillshelf.config import secret

    for name in ("api_key", "judge.api_key", "embedder_api_key", "http_token", "x_secret", "key", "token"):
        assert secret(name), name
    for name in ("search.body_vector_tokens", "judge.tokenizer_path", "monkey", "tokens", "keys", "keyboard"):
        assert not secret(name), name


# --- validate --------------------------------------------------------------------------------

def test_frontmatter_findings_are_on_the_line_of_their_key():
    text = ("---\nname: weird\n"                              # 2
            f"description: {'x' * 1100}\n"                    # 3
            "weird_field: 1\n"                                 # 4
            "skill-type: NOPE\n"                               # 5
            "metadata:\n"                                      # 6
            "  version: abc\n"                                 # 7
            "  n: 3\n"                                         # 8
            "  created: 2024-99-01\n"                          # 9
            f"compatibility: {'y' * 600}\n"                    # 10
            "---\n\nbody\n")
    lines = {f.rule: f.line for f in skill.parse(text, folder_name="weird").findings}
    assert lines == {"description.too-long": 3, "keys.unknown": 4, "keys.seed-top-level": 5,
                     "metadata.skill-type": 5, "metadata.version": 7, "metadata.not-string": 8,
                     "metadata.created": 9, "compatibility.too-long": 10}
    # the name, after a BOM, CRLF line ends, comments and a block scalar that holds "name:"
    text = ("\ufeff---\r\n# about\r\ndescription: |\r\n  name: not a key\r\n  text\r\n\r\nname: Bad_Name\r\n"
            "metadata: {version: x}\r\n---\r\nbody\r\n")
    lines = {f.rule: f.line for f in skill.parse(text, folder_name="other").findings}
    assert lines["name.case"] == 7 and lines["name.folder-mismatch"] == 7
    assert lines["description.multiline"] == 3 and lines["metadata.version"] == 8
    # a missing key stays where the fields start; a YAML error keeps its own line
    assert {f.rule: f.line for f in skill.parse("---\ndescription: d\n---\n").findings}["name.missing"] == 2
    assert skill.parse("---\nname: a\n\ndescription: \n---\n").findings[-1].line == 4
    assert skill.parse("---\nname: a\ndescription: bad: colon\n---\n").findings[-1].line == 3


def test_key_lines_stay_linear_on_hostile_text():
    import time

    t0 = time.perf_counter()
    for head in ("a" + " " * 60_000, "metadata:\n" + " " * 60_000 + "b", "a" * 60_000 + ":x", '"' + " " * 60_000):
        skill.key_lines(head)
    assert time.perf_counter() - t0 < 1


def test_validate_prints_the_line_of_the_key(tmp_path, newcomer):
    path = write_skill(tmp_path / "s", "weird", description="x" * 1100, extra="weird_field: 1\n")
    p = sk("validate", str(path.parent), env=newcomer)
    assert p.returncode == 1
    assert "description.too-long:3:" in p.stdout and "keys.unknown:4:" in p.stdout


def test_validate_of_a_folder_without_skills_fails(tmp_path, newcomer):
    empty = tmp_path / "empty"
    (empty / "docs").mkdir(parents=True)
    (empty / "docs" / "README.md").write_text("# not a skill\n")
    p = sk("validate", str(empty), env=newcomer)
    assert p.returncode == 1
    assert p.stderr.strip() == (f"error: no SKILL.md found under {empty} — pass a skill's folder, a folder of skill "
                                "folders or a SKILL.md file")
    assert "0 valid" not in p.stdout
    p = sk("validate", str(empty), "--json", env=newcomer)
    assert p.returncode == 1 and json.loads(p.stdout) == [] and "no SKILL.md found" in p.stderr
    # one good folder and one empty one: the good one is reported, and the run still fails
    good = write_skill(tmp_path / "good", "fine-skill", description="Does a fine thing")
    p = sk("validate", str(good.parent), str(empty), env=newcomer)
    assert p.returncode == 1 and "1 valid, 0 invalid of 1 files" in p.stdout and str(empty) in p.stderr
    assert sk("validate", str(good.parent), env=newcomer).returncode == 0


# --- version, show, doctor, sync ---------------------------------------------------------------

def test_version_flag_prints_what_the_version_command_prints(newcomer):
    p = sk("--version", env=newcomer)
    assert p.returncode == 0 and p.stderr == ""
    v = sk("version", env=newcomer)
    assert v.returncode == 0 and p.stdout == v.stdout and p.stdout.startswith("skillshelf ")
    assert "--version" in sk("--help", env=newcomer).stdout


def test_show_of_an_unknown_skill_says_where_the_names_are(tmp_path, newcomer):
    home = tmp_path / "h"
    assert sk("init", home=home, env=newcomer).returncode == 0
    p = sk("show", "nonexistent-skill", home=home, env=newcomer)
    assert p.returncode == 1
    assert p.stderr.strip() == ("error: no skill named 'nonexistent-skill' — see `skillshelf list` for the names, "
                                'or search by what it does: `skillshelf search "nonexistent skill"`')
    # a close name keeps the library's own suggestion
    p = sk("show", "cors-fix", home=home, env=newcomer)
    assert p.returncode == 1 and "did you mean: cors-fix-nextjs-api?" in p.stderr


def test_doctor_counts_add_up_when_files_are_invalid(tmp_path, newcomer):
    root = tmp_path / "coll"
    for n in "abcd":
        write_skill(root, n, description=f"Does {n}")
    for n in "ef":
        (root / n).mkdir()
        (root / n / "SKILL.md").write_text(f"---\nname: {n}\n---\nbody\n")
    home = tmp_path / "h"
    assert sk("--root", str(root), "init", "--no-samples", home=home, env=newcomer).returncode == 0
    p = sk("--root", str(root), "doctor", home=home, env=newcomer)
    line = next(x for x in p.stdout.splitlines() if "index vs files" in x)
    assert line == "ok   index vs files: 4 skills indexed from 6 files (2 invalid: see below)"
    assert "invalid files (skipped): 2" in p.stdout
    p = sk("doctor", home=home, env=newcomer)
    line = next(x for x in p.stdout.splitlines() if "index vs files" in x)
    assert line == "ok   index vs files: 0 skills indexed from 0 files"


def test_sync_output_starts_with_its_summary(tmp_path, newcomer):
    home = tmp_path / "h"
    assert sk("init", home=home, env=newcomer).returncode == 0
    p = sk("sync", home=home, env=newcomer)
    assert p.returncode == 0 and p.stderr == ""
    assert p.stdout.startswith("added 0 · updated 0")


def test_validate_inside_a_skill_folder_compares_the_real_folder_name(tmp_path):
    """`skillshelf validate .` from inside the skill's folder: the folder is its real name,
    not the empty name of "."."""
    import os
    import subprocess

    from test_cli_entry import SCRIPT

    d = tmp_path / "my-skill"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: my-skill\ndescription: Does one thing well, and says when to use it.\n"
                                "---\n\n# My skill\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    p = subprocess.run([str(SCRIPT), "validate", "."], cwd=d, capture_output=True, text=True, env=e, timeout=60)
    assert "folder-mismatch" not in p.stdout + p.stderr, p.stdout


def test_bytes_that_are_not_utf8_in_an_argument_are_not_a_traceback(tmp_path):
    import os
    import subprocess

    from test_cli_entry import SCRIPT

    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e["SKILLSHELF_EMBEDDER"] = "none"
    home = tmp_path / "h"
    assert subprocess.run([str(SCRIPT), "--home", str(home), "init"], env=e, capture_output=True).returncode == 0
    p = subprocess.run([str(SCRIPT).encode(), b"--home", str(home).encode(), b"search", b"fix \xff\xfe cors"],
                       env=e, capture_output=True, timeout=60)
    assert p.returncode == 0 and b"cors-fix-nextjs-api" in p.stdout and b"Traceback" not in p.stderr, p.stderr
    p = subprocess.run([str(SCRIPT).encode(), b"--home", str(home).encode(), b"show", b"cors\xff"],
                       env=e, capture_output=True, timeout=60)
    assert p.returncode == 1 and b"Traceback" not in p.stderr and p.stderr.count(b"\n") == 1, p.stderr


def test_one_unreadable_skill_file_does_not_stop_validate(tmp_path):
    good = tmp_path / "skills" / "good-skill"
    good.mkdir(parents=True)
    (good / "SKILL.md").write_text("---\nname: good-skill\ndescription: Does one thing well, and says when to use "
                                   "it.\n---\n\n# Good\n")
    loop = tmp_path / "skills" / "loop-skill"
    loop.mkdir()
    (loop / "SKILL.md").symlink_to(loop / "SKILL.md")      # a link to itself: cannot be read
    p = sk("validate", str(tmp_path / "skills"), "--json")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    out = json.loads(p.stdout)
    rows = out if isinstance(out, list) else out.get("files", out.get("results", []))
    by = {Path(r["path"]).parent.name: r for r in rows}
    assert by["good-skill"]["valid"] and not by["loop-skill"]["valid"], by


def test_init_without_samples_suggests_adding_a_collection(tmp_path):
    p = sk("init", "--no-samples", home=tmp_path / "h")
    assert p.returncode == 0 and "0 skills indexed" in p.stdout and "skillshelf roots add" in p.stdout
    assert "Try: skillshelf search" not in p.stdout
