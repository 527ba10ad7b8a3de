"""`skillshelf pick`: a project's signals (languages, frameworks, tool files) and the usage
log choose the few skills worth installing directly in a client, each with its reason;
--install copies them into the client's skills folder after confirmation. Uses the bundled
embedding model, as a user's library does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_skill

from skillshelf import Library
from skillshelf.errors import NotFoundError, ValidationError
from skillshelf.onboarding.pick import project_signals

SCRIPT = Path(sys.executable).with_name("skillshelf")
if not SCRIPT.exists():
    SCRIPT = Path(shutil.which("skillshelf") or SCRIPT)

EXTRA = {
    "pandas-dataframe-cleaning": "Clean pandas DataFrames - missing values, dtypes, duplicate rows and merges in "
                                 "Python data analysis notebooks",
    "rust-borrow-checker-errors": "Fix Rust borrow checker errors - lifetimes, mutable borrows and moves in cargo "
                                  "projects",
    "github-actions-node-ci": "GitHub Actions CI workflow for Node.js - install with cache, run tests and lint on "
                              "every push and pull request",
}


def make_library(home: Path) -> Path:
    lib = Library.init(home, auto_sync=False)
    for name, desc in EXTRA.items():
        write_skill(lib.config.workspace, name, description=desc,
                    body=f"# {name}\n\n## When to Use\n\n{desc}\n\n## Solution\n\nSteps.\n")
    rep = lib.sync()
    assert rep.added == 6 and not rep.invalid
    lib.close()
    return home


def make_project(root: Path) -> Path:
    (root / "app" / "api" / "items").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"dependencies": {"next": "14.2.0", "react": "18.3.0"},
                                                   "devDependencies": {"typescript": "5.4.0"}}))
    (root / "Dockerfile").write_text("FROM node:20-alpine\n")
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    for i in range(5):
        (root / "app" / "api" / "items" / f"r{i}.ts").write_text("export const x = 1\n")
    (root / "node_modules" / "left-out").mkdir(parents=True)
    (root / "node_modules" / "left-out" / "index.py").write_text("")   # a dependency folder is not the project
    (root / ".git").mkdir()
    return root


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return make_library(tmp_path_factory.mktemp("pick") / "home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "shop")


def test_signals_of_a_project(project):
    signals, notes = project_signals(project)
    by = {s.key: s for s in signals}
    assert {"nextjs", "react", "typescript", "docker", "github-actions", "git"} <= set(by)
    assert "python" not in by                         # node_modules is skipped
    assert by["nextjs"].evidence == "package.json: next" and by["nextjs"].weight == 1.0
    assert by["docker"].evidence == "Dockerfile"
    assert by["git"].weight < by["docker"].weight < by["nextjs"].weight + 0.01
    assert signals[0].weight >= signals[-1].weight
    assert notes == []


def test_signals_of_other_ecosystems(tmp_path):
    p = tmp_path / "svc"
    p.mkdir()
    (p / "pyproject.toml").write_text('[project]\nname = "svc"\ndependencies = ["fastapi>=0.110", "SQLAlchemy[asyncio]"]\n'
                                      '[project.optional-dependencies]\ntest = ["pytest>=8"]\n')
    (p / "requirements-dev.txt").write_text("# dev\nDjango==5.0\n-r base.txt\n")
    (p / "go.mod").write_text("module x\n\nrequire (\n\tgithub.com/gin-gonic/gin v1.9.1\n)\n")
    (p / "Cargo.toml").write_text('[package]\nname = "x"\n[dependencies]\naxum = "0.7"\n')
    (p / "infra").mkdir()
    (p / "infra" / "main.tf").write_text("")
    (p / "broken").mkdir()
    (p / "broken" / "package.json").write_text("{not json")
    for i in range(4):
        (p / f"m{i}.py").write_text("")
    keys = {s.key for s in project_signals(p)[0]}
    assert {"fastapi", "sqlalchemy", "pytest", "django", "gin", "axum", "terraform", "python"} <= keys


def test_pick_proposes_few_distinct_skills_with_reasons(library, project):
    with Library(library, auto_sync=False) as lib:
        res = lib.pick(project, limit=8)
    names = [p.name for p in res.picks]
    assert "cors-fix-nextjs-api" in names and "docker-multi-stage-build" in names
    assert "github-actions-node-ci" in names
    assert "pandas-dataframe-cleaning" not in names and "rust-borrow-checker-errors" not in names
    assert len(names) == len(set(names)) <= 8
    why = {p.name: p.reason for p in res.picks}
    assert "package.json: next" in why["cors-fix-nextjs-api"] and "Dockerfile" in why["docker-multi-stage-build"]
    assert res.picks == sorted(res.picks, key=lambda p: -p.score)
    with Library(library, auto_sync=False) as lib:
        assert len(lib.pick(project, limit=1).picks) == 1
        assert lib.stats().queries == 0      # picking searches without filling the usage log


OFF_STACK = {
    "technology-stack-blueprint-generator": "TypeScript project blueprint generator - types, build configuration and "
                                            "common errors across .NET, Java, Python and JavaScript stacks",
    "expo-react-state": "React components, hooks and state management in Expo and React Native mobile apps",
    "django-models-migrations": "Django web app - models, migrations, views and settings",
    "nextjs-route-handlers": "Next.js app router route handlers and API routes - CORS, caching, build and deploy",
    "react-hooks-state": "React components, hooks and state management with context and reducers",
}


def test_pick_proposes_skills_for_the_projects_stack_from_strong_signals(tmp_path, project):
    """A generic skill that many searches find, a skill for another stack (Expo, Django) and a
    skill only a weak signal (.git) found are not proposed; the framework's own skills come
    first. No skill is named in the method: the skills' own words decide."""
    home = make_library(tmp_path / "h")
    with Library(home, auto_sync=False) as lib:
        for name, desc in OFF_STACK.items():
            write_skill(lib.config.workspace, name, description=desc,
                        body=f"# {name}\n\n## When to Use\n\n{desc}\n\n## Solution\n\nSteps.\n")
        lib.sync()
        # each of them is a likely match for a search the project's signals run
        for query, name in [("TypeScript project: types, build configuration and common errors",
                             "technology-stack-blueprint-generator"),
                            ("React components, hooks and state management", "expo-react-state"),
                            ("git commit messages, branches and pull requests", "git-conventional-commits")]:
            assert any(h.name == name and h.match == "likely" for h in lib.search(query, log=False).hits), name
        res = lib.pick(project, limit=8)
    names = [p.name for p in res.picks]
    assert "technology-stack-blueprint-generator" not in names and "expo-react-state" not in names
    assert "django-models-migrations" not in names
    assert "git-conventional-commits" not in names          # only the weak .git signal found it
    assert {"nextjs-route-handlers", "cors-fix-nextjs-api", "react-hooks-state"} <= set(names)
    assert names[0] in ("nextjs-route-handlers", "cors-fix-nextjs-api")
    assert any("expo-react-state is for" in n for n in res.notes)


def test_a_skill_is_for_the_stack_it_names():
    from skillshelf.onboarding.pick import Signal, for_the_stack, own_stacks

    nextjs = Signal("nextjs", "Next.js", "q", "package.json: next", 1.0)
    react = Signal("react", "React", "q", "package.json: react", 1.0)
    own = own_stacks([nextjs])
    assert own >= {"nextjs", "react", "javascript", "typescript"}
    assert for_the_stack("nextjs cors fix: Fix CORS errors in Next.js API routes", "nextjs-cors-fix", nextjs, own) \
        is None
    assert for_the_stack("expo router: navigation in React Native apps", "expo-router", react, own) == "is for expo"
    assert "mostly for" in for_the_stack("stack blueprint: detects .NET, Java, JavaScript, React, Python",
                                         "stack-blueprint", react, own)
    assert for_the_stack("docker build: small images", "docker-build", nextjs, own) == "does not name Next.js"
    # words inside other words do not count: JavaScript is not Java, "expofp" is not Expo
    assert for_the_stack("javascript tips for React apps", "js-tips", react, own) is None
    assert for_the_stack("expofp automation: React dashboards", "expofp-automation", react, own) is None


def test_the_usage_log_counts(tmp_path, project):
    home = make_library(tmp_path / "h")
    with Library(home, auto_sync=False) as lib:
        for _ in range(3):
            lib.report_outcome("git-conventional-commits", True, note="clean history")
            lib.report_outcome("docker-multi-stage-build", False, note="wrong base image")
        res = lib.pick(project, limit=8)
    why = {p.name: p.reason for p in res.picks}
    assert "worked 3 of 3 reported uses" in why["git-conventional-commits"]
    assert "docker-multi-stage-build" not in why
    assert any("left out docker-multi-stage-build" in n and "failed 3 of 3" in n for n in res.notes)


def test_pick_errors(library, tmp_path):
    with Library(library, auto_sync=False) as lib:
        with pytest.raises(NotFoundError):
            lib.pick(tmp_path / "missing")
        (tmp_path / "file").write_text("")
        with pytest.raises(ValidationError):
            lib.pick(tmp_path / "file")
        with pytest.raises(ValidationError):
            lib.pick(tmp_path, limit=0)
        empty = tmp_path / "empty"
        empty.mkdir()
        res = lib.pick(empty)
        assert res.picks == [] and any("no languages" in n for n in res.notes)


def sk(*args: str, home: Path, user_home: Path, input: str | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    e.update({"HOME": str(user_home), "COLUMNS": "200"})
    return subprocess.run([str(SCRIPT), "--home", str(home), *args], capture_output=True, text=True, env=e,
                          input=input, timeout=180)


def test_cli_pick_and_install(library, project, tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    p = sk("pick", "--for", str(project), home=library, user_home=user)
    assert p.returncode == 0, p.stderr
    assert "cors-fix-nextjs-api — Next.js (package.json: next)" in p.stdout and "signals:" in p.stdout
    # declining installs nothing
    p = sk("pick", "--for", str(project), "--install", "claude-code", home=library, user_home=user, input="n\n")
    assert p.returncode == 1 and "nothing installed" in p.stderr
    skills = project / ".claude" / "skills"
    assert not skills.exists()
    p = sk("pick", "--for", str(project), "-n", "3", "--install", "claude-code", "--yes", "--json",
           home=library, user_home=user)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    installed = {i["name"]: i for i in data["installed"]}
    assert len(installed) == 3 and all(i["action"] == "create" for i in installed.values())
    for name in installed:
        src = library / "skills" / name / "SKILL.md"
        assert (skills / name / "SKILL.md").read_bytes() == src.read_bytes()
    p = sk("pick", "--for", str(project), "-n", "3", "--install", "claude-code", "--yes", home=library,
           user_home=user)
    assert p.returncode == 0 and p.stdout.count("already there") == 3
    # user scope: the client's own folder under HOME
    p = sk("pick", "--for", str(project), "-n", "1", "--install", "cursor", "--scope", "user", "--yes",
           home=library, user_home=user)
    assert p.returncode == 0, p.stderr
    assert len(list((user / ".cursor" / "skills").iterdir())) == 1


def test_cli_pick_errors(library, tmp_path):
    user = tmp_path / "user"
    user.mkdir()
    p = sk("pick", "--for", str(tmp_path / "nope"), home=library, user_home=user)
    assert p.returncode == 1 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = sk("pick", "-n", "0", home=library, user_home=user)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    p = sk("pick", "--for", str(tmp_path), "--install", "claude-desktop", "--scope", "user", home=library,
           user_home=user)
    assert p.returncode == 1 and "no user skills folder" in p.stderr and len(p.stderr.strip().splitlines()) == 1
