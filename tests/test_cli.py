import json

from typer.testing import CliRunner

from skillshelf.cli import app

from conftest import write_skill

runner = CliRunner()


def run(home, *args, root=None):
    base = ["--home", str(home)]
    if root:
        base += ["--root", str(root)]
    return runner.invoke(app, base + list(args))


def test_init_writes_valid_samples_and_search_finds_them(home, monkeypatch):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    r = run(home, "init")
    assert r.exit_code == 0, r.output
    assert "3 skills indexed" in r.output
    r = run(home, "validate", str(home / "skills"))
    assert r.exit_code == 0 and "3 valid" in r.output
    r = run(home, "search", "CORS error in my Next.js API", "--json")
    data = json.loads(r.stdout)
    assert data["hits"][0]["name"] == "cors-fix-nextjs-api"
    assert data["degraded"]  # embedder 'none' is announced
    assert {"id", "name", "path", "score", "match"} <= set(data["hits"][0])


def test_list_json_prints_every_skill_unless_limited(home, tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "r"
    for i in range(230):
        write_skill(root, f"s{i:03d}")
    r = run(home, "list", "--json", root=root)
    assert r.exit_code == 0
    assert len(json.loads(r.stdout)) == 230
    r = run(home, "list", "--json", "--limit", "5", root=root)
    assert len(json.loads(r.stdout)) == 5


def test_show_and_doctor(home, tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "r"
    write_skill(root, "a/dup", name="dup")
    write_skill(root, "b/dup", name="dup")
    run(home, "init")
    r = run(home, "show", "docker-multi-stage-build", "--section", "Verification")
    assert r.exit_code == 0 and "## Verification" in r.output and "## Solution" not in r.output
    r = run(home, "doctor", "--json", root=root)
    data = json.loads(r.stdout)
    assert any(c["name"] == "dup" for c in data["clashes"])
    assert any(c["name"] == "embedder" and c["status"] == "warn" for c in data["checks"])


def test_user_errors_are_one_line_without_traceback(home, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    run(home, "init", "--no-samples")
    p = subprocess.run([sys.executable, "-m", "skillshelf.cli", "--home", str(home), "show", "nope"],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.strip().startswith("error: no skill named 'nope'")
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = subprocess.run([sys.executable, "-m", "skillshelf.cli", "--home", str(home), "--root", "/nonexistent/x",
                        "list"], capture_output=True, text=True)
    assert p.returncode == 1 and "does not exist" in p.stderr and "Traceback" not in p.stderr
    # a usage mistake (a global option after the command, an unknown option) is a usage error, not a crash
    p = subprocess.run([sys.executable, "-m", "skillshelf.cli", "--home", str(home), "search", "cors", "--root", "x"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "No such option" in p.stderr and "--root" in p.stderr
    assert "Traceback" not in p.stderr and "Usage:" in p.stderr
    p = subprocess.run([sys.executable, "-m", "skillshelf.cli", "--home", str(home), "list", "--limit", "0"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "limit 0 is out of range" in p.stderr


def test_validate_reports_findings_and_exit_code(tmp_path):
    bad = tmp_path / "Bad Skill"
    bad.mkdir()
    (bad / "SKILL.md").write_text("---\nname: Bad Skill\ndescription: x\n---\n")
    r = runner.invoke(app, ["validate", str(bad), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data[0]["valid"] is False and any(f["rule"] == "name.case" for f in data[0]["findings"])


def test_version():
    r = runner.invoke(app, ["version"])
    assert r.exit_code == 0 and "skillshelf" in r.output


def test_evolution_review_and_usage_commands(home, monkeypatch):
    from skillshelf import Library

    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    run(home, "init")
    lib = Library(home, write_policy="propose")
    lib.save("FIX", target_skill_name="git-conventional-commits", lesson="squash merges keep only the title")
    r = run(home, "review", "list")
    assert "git-conventional-commits" in r.output and "FIX" in r.output
    r = run(home, "review", "approve", "git-conventional-commits")
    assert r.exit_code == 0 and "version 2" in r.output
    r = run(home, "history", "git-conventional-commits", "--json")
    h = json.loads(r.stdout)
    assert h["versions"] == [1, 2] and h["changelog"][-1]["trigger"] == "approved"
    r = run(home, "diff", "git-conventional-commits", "1", "2")
    assert "+- v2: squash merges keep only the title" in r.output
    assert run(home, "rollback", "git-conventional-commits", "1").exit_code == 0
    r = run(home, "search", "commit message format", "--json")
    qid = json.loads(r.stdout)["query_id"]
    r = run(home, "report-outcome", "git-conventional-commits", "--worked", "--note", "clear", "--query-id", str(qid))
    assert r.exit_code == 0 and "1 reports" in r.output
    data = json.loads(run(home, "stats", "--json").stdout)
    assert data["reports"] == 1 and data["report_rate"] == 1.0
    assert "## What worked" in run(home, "report").output
    r = run(home, "deprecate", "docker-multi-stage-build", "--reason", "old")
    assert r.exit_code == 0
    r = run(home, "delete", "docker-multi-stage-build", "--yes")
    assert r.exit_code == 0 and not (home / "skills" / "docker-multi-stage-build").exists()
    assert run(home, "config").exit_code == 0


def test_roots_are_saved_and_used_by_later_commands(home, tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "collection"
    write_skill(root, "zebra-care", description="Care for zebras")
    run(home, "init", "--no-samples")
    assert run(home, "roots", "add", str(root)).exit_code == 0
    assert json.loads(run(home, "roots", "list", "--json").stdout) == [str(root.resolve())]
    r = run(home, "search", "zebras", "--json")  # no --root: the saved one is used
    assert json.loads(r.stdout)["hits"][0]["name"] == "zebra-care"
    assert run(home, "roots", "remove", str(root)).exit_code == 0
    assert json.loads(run(home, "search", "zebras", "--json").stdout)["hits"] == []
    r = run(home, "roots", "remove", str(root))
    assert r.exit_code != 0


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """The command line in-process through ``cli.run`` (what the console script runs): the
    exit code, stdout and stderr."""
    from skillshelf.cli import run

    capsys.readouterr()
    code = run([str(a) for a in args])
    o = capsys.readouterr()
    return code, o.out, o.err


HOSTILE = ('---\nname: evil\ndescription: "Reads [/etc/hosts] and [/bold] then \\x1b[31mred\\x1b[0m :warning: \\x9b2J"\n'
           'metadata:\n  display-name: "[/bold]"\n  tags: "[/x], y"\n---\n\n# [/bold] body \x1b[2J\n\n## Solution\n\nx\n')


def test_skill_text_is_printed_literally_and_without_control_sequences(home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "r"
    (root / "evil").mkdir(parents=True)
    (root / "evil" / "SKILL.md").write_text(HOSTILE, encoding="utf-8")
    g = ["--home", home, "--root", root]
    assert cli(capsys, *g, "init")[0] == 0
    for args in (["show", "evil"], ["search", "hosts red"], ["list"], ["history", "evil"], ["stats"],
                 ["report"], ["doctor"], ["list", "--json"], ["show", "evil", "--json"]):
        code, o, e = cli(capsys, *g, *args)
        assert code in (0, 1) and "Traceback" not in e and "MarkupError" not in e, (args, e)
        assert "\x1b" not in o + e and "\x9b" not in o + e, args
        if args[0] in ("show", "search") and "--json" not in args:
            assert "[/etc/hosts] and [/bold] then ␛[31mred␛[0m :warning:" in o, o
        if args == ["show", "evil"]:
            assert o.startswith("[/bold]") and "# [/bold] body ␛[2J" in o
    # JSON keeps the data (escaped), it does not replace it
    code, o, _ = cli(capsys, *g, "show", "evil", "--json")
    assert json.loads(o)["description"].endswith("\x1b[31mred\x1b[0m :warning: \x9b2J")
    # a hostile argument in an error message is made visible too
    code, _, e = cli(capsys, *g, "show", "no\x1b[31mpe")
    assert code == 1 and "\x1b" not in e
