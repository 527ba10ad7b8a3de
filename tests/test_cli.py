import json
import shutil

from conftest import write_skill
from typer.testing import CliRunner

from skillshelf.cli import app

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


def test_user_errors_are_one_line_without_traceback(home, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    run(home, "init", "--no-samples")
    g = ["--home", home]
    code, _, e = cli(capsys, *g, "show", "nope")
    assert code == 1 and e.startswith("error: no skill named 'nope'") and len(e.strip().splitlines()) == 1
    code, _, e = cli(capsys, *g, "--root", "/nonexistent/x", "list")
    assert code == 1 and "does not exist" in e and len(e.strip().splitlines()) == 1
    # a usage mistake is exit 2 and one line naming the fix: a global option after the command ...
    code, _, e = cli(capsys, *g, "search", "cors", "--root", "x")
    assert code == 2 and len(e.strip().splitlines()) == 1
    assert e.startswith("error: No such option: --root") and "put it before the command" in e
    # ... an unknown option, a bad value
    code, _, e = cli(capsys, *g, "list", "--bogus")
    assert code == 2 and e.strip() == "error: No such option: --bogus — see `skillshelf list --help`"
    code, _, e = cli(capsys, *g, "list", "--limit", "0")
    assert code == 2 and "0 is out of range" in e and "use 1 or more" in e


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
    r = run(home, "search", "commit message format", "--log", "--json")   # logged: a report names it
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


def test_sync_shows_each_phase_and_the_whole_time(home, monkeypatch, capsys):
    """The embedding after the last file is a phase of its own (with texts/s and time left),
    and the time printed covers the whole sync, not only the file pass."""
    import io
    import time

    from skillshelf.cli import common
    from skillshelf.library import Library
    from skillshelf.search.sync import SyncReport

    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "fake")   # a model is configured (never loaded: sync is faked)
    screen = io.StringIO()
    monkeypatch.setattr(common, "err", common._SafeConsole(file=screen, force_terminal=True,
                                                           force_interactive=True, width=160))

    def fake_sync(self, *, progress=None, embed=True, embed_progress=None):
        for i in range(4):
            progress(i, 3)
        time.sleep(0.3)                      # the model finishing what it embedded beside the files
        for done in (32, 64, 96):
            embed_progress(done, 128)
            time.sleep(0.15)
        embed_progress(128, 128)
        return SyncReport(added=3, seconds=0.01)

    monkeypatch.setattr(Library, "sync", fake_sync)
    code, o, _ = cli(capsys, "--home", home, "sync")
    assert code == 0
    shown = screen.getvalue()
    for phase in ("finding skill files", "reading · lexical index", "embedding (finishing)", "texts/s", "left"):
        assert phase in shown, phase
    seconds = float(o.rsplit("(", 1)[1].split("s)")[0])
    assert seconds >= 0.7, o                  # not the 0.01 s of the file pass


def test_filters_that_match_nothing_by_mistake_are_errors(home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    coll = tmp_path / "collection"
    for i in range(6):
        write_skill(coll, f"tagged-{i}", extra="metadata:\n  tags: x\n  skill-type: WORKFLOW\n")
    for i in range(4):
        write_skill(coll, f"plain-{i}")
    g = ["--home", home]
    assert cli(capsys, *g, "init", "--no-samples")[0] == 0
    assert cli(capsys, *g, "roots", "add", coll)[0] == 0
    # --root takes the path given to `roots add`, or the label
    for root in (str(coll), "collection"):
        code, o, _ = cli(capsys, *g, "list", "--root", root, "--json")
        assert code == 0 and len(json.loads(o)) == 10
    code, _, e = cli(capsys, *g, "list", "--root", "colection")
    assert code == 1 and e.startswith("error: no root 'colection'") and f"collection ({coll.resolve()})" in e
    code, _, e = cli(capsys, *g, "list", "--type", "BOGUS")
    assert code == 2 and "WORKFLOW" in e and "IMPLEMENTATION" in e
    code, o, _ = cli(capsys, *g, "list", "--type", "workflow", "--json")
    assert code == 0 and len(json.loads(o)) == 6
    # the footer counts what the filter matched
    code, o, _ = cli(capsys, *g, "list", "--tag", "x", "--limit", "2")
    assert "2 shown of 6 matching" in o
    code, o, _ = cli(capsys, *g, "list", "--tag", "x")
    assert "shown of" not in o
    code, o, _ = cli(capsys, *g, "list", "--limit", "1" * 30, "--json")
    assert code == 0 and len(json.loads(o)) == 10        # "at most 10^30": all of them


def test_contradictions_impossible_values_and_huge_numbers_are_one_line(home, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    g = ["--home", home]
    assert cli(capsys, *g, "init")[0] == 0
    code, _, e = cli(capsys, *g, "report-outcome", "git-conventional-commits", "--worked", "--failed")
    assert code == 2 and "--worked and --failed contradict each other" in e and len(e.splitlines()) == 1
    code, _, e = cli(capsys, *g, "report-outcome", "git-conventional-commits")
    assert code == 2 and "--worked or --failed" in e
    assert json.loads(cli(capsys, *g, "stats", "--json")[1])["reports"] == 0   # nothing was recorded
    for cmd in (["report"], ["stats"]):
        code, _, e = cli(capsys, *g, *cmd, "--since", "2026-13-45")
        assert code == 2 and "'2026-13-45' is not a date: use YYYY-MM-DD" in e and len(e.splitlines()) == 1
    code, _, e = cli(capsys, *g, "prune-usage", "--before", "2026-02-30", "--yes")
    assert code == 2 and "is not a date" in e
    code, _, e = cli(capsys, *g, "report-outcome", "git-conventional-commits", "--worked", "--query-id", "9" * 30)
    assert code == 1 and e.startswith("error: no query with id 999") and len(e.splitlines()) == 1
    # negative numbers are numbers, not unknown options
    code, _, e = cli(capsys, *g, "extend-ttl", "git-conventional-commits", "-5")
    assert code == 2 and "-5 is negative: the number of days must be positive" in e and "No such option" not in e
    code, _, e = cli(capsys, *g, "rollback", "git-conventional-commits", "0")
    assert code == 2 and "the version number must be positive" in e
    code, _, e = cli(capsys, *g, "diff", "git-conventional-commits", "1", "-2")
    assert code == 2 and "-2 is negative" in e


def test_messages_speak_the_command_line(home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    monkeypatch.delenv("WORKSPACE_FOLDER", raising=False)
    monkeypatch.chdir(tmp_path)                       # no git repo: the current repo is unknown
    g = ["--home", home]
    assert cli(capsys, *g, "init")[0] == 0
    code, _, e = cli(capsys, *g, "search", "cors", "--type", "NOPE")
    assert code == 2 and "--type 'NOPE'" in e and "skill_type" not in e
    code, _, e = cli(capsys, *g, "search", "cors", "--repo-scope", "current")
    assert code == 1 and "--current-repo" in e and "current_repo" not in e and "repo_scope" not in e
    # help shows PATH, not a Python type
    code, o, _ = cli(capsys, "--help")
    assert "--root PATH" in o and "list[Path]" not in o
    # config: plain values, where each came from, no test backend, no credits to other projects
    write_skill(tmp_path / "r", "a")
    (home / "config.toml").write_text('write_policy = "open"\n')
    monkeypatch.setenv("SKILLSHELF_HASH_QUERIES", "1")
    code, o, _ = cli(capsys, *g, "--root", tmp_path / "r", "config")
    assert code == 0 and "PosixPath" not in o and "fake" not in o
    assert "the_librarian" not in o and "seeds" not in o and "Skills Lab" not in o
    rows = {line.split()[0]: line.split()[1:] for line in o.splitlines()[2:] if line.strip()}
    assert rows["home"][:2] == [str(home.resolve()), "flag"]
    assert rows["roots"][:2] == [str(tmp_path / "r"), "flag"]
    assert rows["write_policy"][:2] == ["open", "file"] and rows["hash_queries"][:2] == ["True", "environment"]
    assert rows["embedder"][:2] == ["none", "environment"] and rows["search.rrf_k"][:2] == ["60", "default"]
    data = json.loads(cli(capsys, *g, "config", "--json")[1])
    assert data["write_policy"] == {"value": "open", "source": "file", "why": data["write_policy"]["why"]}
    # an unknown embedder names the real choices (and not the test backend)
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "bogus")
    code, _, e = cli(capsys, *g, "list")
    assert code == 1 and "unknown embedder 'bogus' (from SKILLSHELF_EMBEDDER)" in e
    assert "minilm, fastembed, ollama, openai, none" in e and "fake" not in e


def test_doctor_summarises_name_clashes(home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "r"
    for i in range(8):
        write_skill(root, f"a/n{i}", name=f"n{i}")
        write_skill(root, f"b/n{i}", name=f"n{i}")
    g = ["--home", home, "--root", root]
    assert cli(capsys, *g, "init", "--no-samples")[0] == 0
    code, o, _ = cli(capsys, *g, "doctor")
    clash_lines = [x for x in o.splitlines() if x.startswith("  n")]
    assert "8 names are used by more than one skill" in o and len(clash_lines) == 5
    assert "… and 3 more: `skillshelf doctor --verbose` lists them all" in o
    code, o, _ = cli(capsys, *g, "doctor", "--verbose")
    assert len([x for x in o.splitlines() if x.startswith("  n")]) == 8
    assert len(json.loads(cli(capsys, *g, "doctor", "--json")[1])["clashes"]) == 8


def test_doctor_does_not_call_a_persons_copy_of_a_skill_a_clash(home, tmp_path, monkeypatch, capsys):
    from skillshelf import Library
    from skillshelf.embeddings.fake import FakeEmbedder

    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    root = tmp_path / "r"
    write_skill(root, "alpha", description="Rotate the alpha keys", body="# Alpha\n\nStep one.\n")
    write_skill(root, "beta", description="Deploy the beta gizmo", body="# Beta\n\nStep one.\n")
    g = ["--home", home, "--root", root]
    assert cli(capsys, *g, "init", "--no-samples")[0] == 0
    with Library(home=home, roots=[str(root)], embedder=FakeEmbedder()) as lib:     # a person's edit: a copy
        rec = lib.get("alpha")
        lib.save("FIX", target_skill_name="alpha", body=rec.body.replace("Step one", "Step 1"), replace_body=True,
                 by="person", reason="mine")
        assert lib.get("alpha").kind == "workspace"
    write_skill(home / "skills", "beta", description="Another beta, not a copy")      # a clash
    code, o, _ = cli(capsys, *g, "doctor", "--json")
    clashes = json.loads(o)["clashes"]
    assert [c["name"] for c in clashes] == ["beta"], clashes


def test_a_saved_root_that_disappears_is_reported_not_fatal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    home = tmp_path / "home"
    coll = tmp_path / "coll"
    write_skill(coll, "zebra-care", description="Care for zebras")
    write_skill(tmp_path / "other", "okapi-care", description="Care for okapis")
    g = ["--home", home]
    assert cli(capsys, *g, "init", "--no-samples")[0] == 0
    assert cli(capsys, *g, "roots", "add", coll)[0] == 0
    assert cli(capsys, *g, "roots", "add", tmp_path / "other")[0] == 0
    assert cli(capsys, *g, "sync", "--json")[0] == 0
    shutil.rmtree(coll)
    config = home / "config.toml"
    # other commands: one warning naming the config file and the fix, then the remaining roots
    for args in (["list", "--json"], ["search", "care for animals", "--json"]):
        code, o, e = cli(capsys, *g, *args)
        assert code == 0, e
        assert len(e.strip().splitlines()) == 1 and e.startswith(f"warning: skill root {coll} (saved in {config})")
        assert f"roots remove {coll}" in e
    code, o, _ = cli(capsys, *g, "list", "--json")
    assert [s["name"] for s in json.loads(o)] == ["okapi-care"]
    # doctor: a failed check naming config.toml and the fix, exit 1
    code, o, e = cli(capsys, *g, "doctor")
    assert code == 1 and e == ""
    line = next(x for x in o.splitlines() if "missing root" in x)
    assert line.startswith("FAIL") and str(config) in line and f"roots remove {coll}" in line
    data = json.loads(cli(capsys, *g, "doctor", "--json")[1])
    assert not data["ok"] and any(r["path"] == str(coll) and not r["exists"] for r in data["roots"])
    code, o, _ = cli(capsys, *g, "roots", "list")
    assert code == 0 and str(coll) in o and "does not exist" in o
    # the fix works
    code, o, e = cli(capsys, *g, "roots", "remove", coll)
    assert code == 0 and e == "" and str(coll) not in o
    code, o, e = cli(capsys, *g, "list", "--json")
    assert code == 0 and e == ""
    assert cli(capsys, *g, "doctor", "--json")[0] == 0
    # a root given for one command must exist: one line naming the fix
    code, _, e = cli(capsys, *g, "--root", tmp_path / "typo", "list")
    assert code == 1
    assert e.strip() == f"error: skill root {tmp_path / 'typo'} does not exist — check the path, or leave out " \
                        f"--root {tmp_path / 'typo'}"
    # a root from SKILLSHELF_ROOTS that has gone says where it came from
    monkeypatch.setenv("SKILLSHELF_ROOTS", str(tmp_path / "gone"))
    code, _, e = cli(capsys, *g, "list")
    assert code == 0 and "(from SKILLSHELF_ROOTS) does not exist" in e and "take it out of SKILLSHELF_ROOTS" in e



def test_stats_of_a_new_library_says_none_instead_of_empty_tables(home, monkeypatch, capsys):
    monkeypatch.setenv("SKILLSHELF_EMBEDDER", "none")
    assert cli(capsys, "--home", home, "init")[0] == 0
    code, o, _ = cli(capsys, "--home", home, "stats")
    assert code == 0
    for line in ("most used: none yet (no outcome reported)", "low success (rewrite candidates): none",
                 "gaps (no confident match): none"):
        assert line in o, o
    assert "┃" not in o and "━" not in o, o          # no table header without rows
