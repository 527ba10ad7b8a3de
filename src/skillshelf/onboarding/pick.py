"""``pick``: the few skills worth installing directly in a client, for one project.

the_librarian's lesson: every installed skill's description sits in the agent's context on
every request, and with fifty of them the wrong one fires; with eight sharp ones triggering
is nearly deterministic. The rest stay in the library, one search away.

A project's *signals* are read from its files: languages (by file extension), frameworks
and tools (the dependencies in package.json, pyproject.toml, requirements*.txt, go.mod,
Cargo.toml, Gemfile, composer.json) and the files that name a tool by existing (Dockerfile,
CI workflows, Terraform, ...). Each signal becomes a search; skills found as likely matches
by the strongest signals, and skills the usage log says worked, are proposed, at most
``limit`` distinct ones, each with the signal or outcome that chose it. Skills that keep
failing are left out. Reading is bounded: a few folder levels, a capped number of files,
small manifests only.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAX_FILES = 30_000          # files looked at in one project
MAX_DEPTH = 6               # folder levels below the project
MAX_MANIFEST_BYTES = 1_000_000
MAX_SIGNALS = 14            # searches run for one pick
STRONG = 0.75               # a signal this sure (a dependency, a tool's own file) may propose a skill


@dataclass
class Signal:
    key: str          # e.g. "nextjs"
    label: str        # e.g. "Next.js"
    query: str        # what is searched
    evidence: str     # e.g. "package.json: next"
    weight: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Pick:
    name: str
    id: str
    path: str
    description: str
    score: float
    reason: str
    signals: list[str] = field(default_factory=list)
    worked: int = 0
    reports: int = 0

    @property
    def folder(self) -> Path:
        return Path(self.path).parent

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PickResult:
    project: str
    signals: list[Signal]
    picks: list[Pick]
    notes: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"project": self.project, "signals": [s.as_dict() for s in self.signals],
                "picks": [p.as_dict() for p in self.picks], "notes": self.notes}


# --- what the files say -------------------------------------------------------------------------

LANGUAGES = {
    ".py": ("python", "Python"), ".ts": ("typescript", "TypeScript"), ".tsx": ("typescript", "TypeScript"),
    ".js": ("javascript", "JavaScript"), ".jsx": ("javascript", "JavaScript"), ".mjs": ("javascript", "JavaScript"),
    ".cjs": ("javascript", "JavaScript"), ".go": ("go", "Go"), ".rs": ("rust", "Rust"), ".java": ("java", "Java"),
    ".kt": ("kotlin", "Kotlin"), ".rb": ("ruby", "Ruby"), ".php": ("php", "PHP"), ".cs": ("csharp", "C#"),
    ".swift": ("swift", "Swift"), ".c": ("c", "C"), ".h": ("c", "C"), ".cpp": ("cpp", "C++"), ".cc": ("cpp", "C++"),
    ".hpp": ("cpp", "C++"), ".scala": ("scala", "Scala"), ".ex": ("elixir", "Elixir"), ".exs": ("elixir", "Elixir"),
    ".dart": ("dart", "Dart"), ".sh": ("shell", "shell scripts"), ".bash": ("shell", "shell scripts"),
    ".sql": ("sql", "SQL"), ".tf": ("terraform", "Terraform"), ".vue": ("vue", "Vue"), ".svelte": ("svelte", "Svelte"),
    ".lua": ("lua", "Lua"), ".r": ("r", "R"), ".jl": ("julia", "Julia"), ".zig": ("zig", "Zig"),
}
LANGUAGE_QUERY = {
    "python": "Python project: packaging, tests, typing and common errors",
    "typescript": "TypeScript project: types, build configuration and common errors",
    "javascript": "JavaScript and Node.js project: modules, tooling and common errors",
    "go": "Go project: modules, tests, error handling",
    "rust": "Rust project: cargo, ownership errors, tests",
    "shell": "shell scripts in bash: safe scripting, quoting, error handling",
    "sql": "SQL queries, schema migrations and indexes",
    "terraform": "Terraform infrastructure as code: modules, state, plan and apply",
}
# dependency name → (key, label, query)
DEPENDENCIES: dict[str, tuple[str, str, str]] = {
    # JavaScript / TypeScript
    "next": ("nextjs", "Next.js", "Next.js app: API routes, route handlers, CORS, build and deploy"),
    "react": ("react", "React", "React components, hooks and state management"),
    "vue": ("vue", "Vue", "Vue components and state"),
    "svelte": ("svelte", "Svelte", "Svelte and SvelteKit components and routing"),
    "@sveltejs/kit": ("svelte", "SvelteKit", "Svelte and SvelteKit components and routing"),
    "@angular/core": ("angular", "Angular", "Angular components, services and modules"),
    "nuxt": ("nuxt", "Nuxt", "Nuxt app: pages, server routes and deploy"),
    "express": ("express", "Express", "Express.js API server: routes, middleware and CORS"),
    "fastify": ("fastify", "Fastify", "Fastify API server: routes and plugins"),
    "@nestjs/core": ("nestjs", "NestJS", "NestJS API: modules, controllers and providers"),
    "vite": ("vite", "Vite", "Vite build and dev server configuration, proxy"),
    "jest": ("jest", "Jest", "Jest unit tests and mocks"),
    "vitest": ("vitest", "Vitest", "Vitest unit tests and mocks"),
    "@playwright/test": ("playwright", "Playwright", "Playwright end-to-end browser tests"),
    "cypress": ("cypress", "Cypress", "Cypress end-to-end tests"),
    "tailwindcss": ("tailwind", "Tailwind CSS", "Tailwind CSS styling and configuration"),
    "prisma": ("prisma", "Prisma", "Prisma ORM schema and migrations"),
    "@prisma/client": ("prisma", "Prisma", "Prisma ORM schema and migrations"),
    "drizzle-orm": ("drizzle", "Drizzle", "Drizzle ORM schema and migrations"),
    "electron": ("electron", "Electron", "Electron desktop app packaging and IPC"),
    "react-native": ("react-native", "React Native", "React Native mobile app build and navigation"),
    "expo": ("expo", "Expo", "Expo and React Native mobile app build and navigation"),
    "graphql": ("graphql", "GraphQL", "GraphQL schema, resolvers and queries"),
    "stripe": ("stripe", "Stripe", "Stripe payments integration and webhooks"),
    "typescript": ("typescript", "TypeScript", "TypeScript project: types, build configuration and common errors"),
    "eslint": ("eslint", "ESLint", "ESLint configuration and lint errors"),
    # Python
    "django": ("django", "Django", "Django web app: models, migrations, views and settings"),
    "flask": ("flask", "Flask", "Flask web app: routes, blueprints and CORS"),
    "fastapi": ("fastapi", "FastAPI", "FastAPI service: routes, dependencies, CORS and async"),
    "pytest": ("pytest", "pytest", "pytest tests: fixtures, parametrize and mocking"),
    "sqlalchemy": ("sqlalchemy", "SQLAlchemy", "SQLAlchemy ORM models, sessions and queries"),
    "alembic": ("alembic", "Alembic", "Alembic database migrations"),
    "pandas": ("pandas", "pandas", "pandas data frames: cleaning, joins and performance"),
    "numpy": ("numpy", "NumPy", "NumPy arrays and vectorized computation"),
    "torch": ("pytorch", "PyTorch", "PyTorch model training and data loaders"),
    "tensorflow": ("tensorflow", "TensorFlow", "TensorFlow and Keras model training"),
    "scikit-learn": ("sklearn", "scikit-learn", "scikit-learn models, pipelines and evaluation"),
    "celery": ("celery", "Celery", "Celery background tasks and queues"),
    "pydantic": ("pydantic", "Pydantic", "Pydantic models and validation"),
    "typer": ("python-cli", "Typer", "Python command line tools with Typer or Click"),
    "click": ("python-cli", "Click", "Python command line tools with Typer or Click"),
    "streamlit": ("streamlit", "Streamlit", "Streamlit data apps"),
    "langchain": ("langchain", "LangChain", "LangChain LLM apps: chains, agents and retrieval"),
    "boto3": ("aws", "AWS SDK", "AWS with boto3: S3, Lambda, IAM permissions"),
    "apache-airflow": ("airflow", "Airflow", "Airflow DAGs and scheduling"),
    "scrapy": ("scrapy", "Scrapy", "Scrapy web scraping spiders"),
    "mcp": ("mcp", "MCP", "building an MCP server or client: tools, resources and transports"),
    # Go
    "github.com/gin-gonic/gin": ("gin", "Gin", "Go web API with Gin: routes, middleware and CORS"),
    "github.com/labstack/echo/v4": ("echo", "Echo", "Go web API with Echo: routes and middleware"),
    "github.com/spf13/cobra": ("cobra", "Cobra", "Go command line tools with Cobra"),
    "google.golang.org/grpc": ("grpc", "gRPC", "gRPC services and protobuf"),
    "gorm.io/gorm": ("gorm", "GORM", "GORM models and migrations in Go"),
    "github.com/gofiber/fiber/v2": ("fiber", "Fiber", "Go web API with Fiber"),
    # Rust
    "tokio": ("tokio", "Tokio", "async Rust with Tokio"),
    "axum": ("axum", "Axum", "Rust web API with Axum: routing, extractors and CORS"),
    "actix-web": ("actix", "Actix Web", "Rust web API with Actix Web"),
    "clap": ("clap", "clap", "Rust command line tools with clap"),
    "sqlx": ("sqlx", "SQLx", "SQLx database queries and migrations in Rust"),
    "bevy": ("bevy", "Bevy", "Bevy game engine in Rust"),
    # Ruby / PHP
    "rails": ("rails", "Rails", "Ruby on Rails app: models, migrations and controllers"),
    "rspec": ("rspec", "RSpec", "RSpec tests in Ruby"),
    "laravel/framework": ("laravel", "Laravel", "Laravel app: routes, Eloquent and migrations"),
    "symfony/framework-bundle": ("symfony", "Symfony", "Symfony app: routes, services and Doctrine"),
}
# a file (or glob) whose presence names a tool: (pattern, key, label, query, weight)
FILES: list[tuple[str, str, str, str, float]] = [
    ("Dockerfile*", "docker", "Docker", "Dockerfile: multi-stage Docker image build, small images, layer caching",
     0.9),
    ("*.dockerfile", "docker", "Docker", "Dockerfile: multi-stage Docker image build, small images, layer caching",
     0.9),
    ("docker-compose.y*ml", "compose", "Docker Compose", "Docker Compose services, networks and volumes", 0.8),
    ("compose.y*ml", "compose", "Docker Compose", "Docker Compose services, networks and volumes", 0.8),
    (".github/workflows/*.y*ml", "github-actions", "GitHub Actions",
     "GitHub Actions CI workflow: tests, caching and releases", 0.9),
    (".gitlab-ci.yml", "gitlab-ci", "GitLab CI", "GitLab CI pipeline: stages, caching and deploy", 0.9),
    ("Jenkinsfile", "jenkins", "Jenkins", "Jenkins pipeline", 0.8),
    ("*.tf", "terraform", "Terraform", "Terraform infrastructure as code: modules, state, plan and apply", 0.9),
    ("Chart.yaml", "helm", "Helm", "Helm charts for Kubernetes deployments", 0.8),
    ("kustomization.y*ml", "kubernetes", "Kubernetes", "Kubernetes deployments, services and debugging pods", 0.8),
    ("manage.py", "django", "Django", "Django web app: models, migrations, views and settings", 0.9),
    ("alembic.ini", "alembic", "Alembic", "Alembic database migrations", 0.8),
    ("conftest.py", "pytest", "pytest", "pytest tests: fixtures, parametrize and mocking", 0.8),
    ("pytest.ini", "pytest", "pytest", "pytest tests: fixtures, parametrize and mocking", 0.8),
    ("next.config.*", "nextjs", "Next.js", "Next.js app: API routes, route handlers, CORS, build and deploy", 0.9),
    ("vite.config.*", "vite", "Vite", "Vite build and dev server configuration, proxy", 0.7),
    ("tailwind.config.*", "tailwind", "Tailwind CSS", "Tailwind CSS styling and configuration", 0.7),
    ("tsconfig.json", "typescript", "TypeScript", "TypeScript project: types, build configuration and common errors",
     0.7),
    ("schema.prisma", "prisma", "Prisma", "Prisma ORM schema and migrations", 0.8),
    ("openapi.y*ml", "openapi", "OpenAPI", "OpenAPI specification and API documentation", 0.7),
    ("openapi.json", "openapi", "OpenAPI", "OpenAPI specification and API documentation", 0.7),
    ("Makefile", "make", "Make", "Makefile targets and build automation", 0.5),
    (".pre-commit-config.yaml", "pre-commit", "pre-commit", "pre-commit hooks for linting and formatting", 0.6),
    ("vercel.json", "vercel", "Vercel", "deploying to Vercel: builds, environment variables and functions", 0.8),
    ("netlify.toml", "netlify", "Netlify", "deploying to Netlify", 0.8),
    ("fly.toml", "fly", "Fly.io", "deploying to Fly.io", 0.8),
    ("serverless.y*ml", "serverless", "Serverless", "Serverless framework functions on AWS Lambda", 0.8),
    ("firebase.json", "firebase", "Firebase", "Firebase hosting, functions and Firestore rules", 0.8),
    ("requirements*.txt", "python", "Python", LANGUAGE_QUERY["python"], 0.6),
]
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._\-]*)")


def _norm(dep: str) -> str:
    return dep.strip().lower().replace("_", "-")


def _read_small(p: Path) -> str | None:
    from ..files import FileRefused, read_bounded

    try:
        return read_bounded(p, MAX_MANIFEST_BYTES).decode("utf-8", "replace")
    except (FileRefused, OSError):
        return None


def _deps_package_json(text: str) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out: list[str] = []
    if isinstance(data, dict):
        for k in ("dependencies", "devDependencies", "peerDependencies"):
            if isinstance(data.get(k), dict):
                out += list(data[k])
    return out


def _req_names(lines: list[Any]) -> list[str]:
    out = []
    for line in lines:
        if not isinstance(line, str):
            continue
        m = _NAME.match(line.split("#", 1)[0])
        if m and not line.lstrip().startswith("-"):
            out.append(m.group(1))
    return out


def _deps_requirements(text: str) -> list[str]:
    return _req_names(text.splitlines())


def _deps_pyproject(text: str) -> list[str]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return []
    out: list[str] = []
    project = data.get("project")
    proj = project if isinstance(project, dict) else {}
    out += _req_names(proj.get("dependencies") or [])
    opt = proj.get("optional-dependencies")
    if isinstance(opt, dict):
        for v in opt.values():
            out += _req_names(v if isinstance(v, list) else [])
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for v in groups.values():
            out += _req_names(v if isinstance(v, list) else [])
    tool_table = data.get("tool")
    tool = tool_table if isinstance(tool_table, dict) else {}
    poetry_table = tool.get("poetry")
    poetry = poetry_table if isinstance(poetry_table, dict) else {}
    for k in ("dependencies", "dev-dependencies"):
        if isinstance(poetry.get(k), dict):
            out += list(poetry[k])
    if "pytest" in tool or "pytest.ini_options" in str(tool.get("pytest", "")):
        out.append("pytest")
    return out


def _deps_go_mod(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*(?:require\s+)?([a-z0-9.\-]+\.[a-z]+/[^\s]+)\s+v", line)
        if m:
            out.append(m.group(1))
    return out


def _deps_cargo(text: str) -> list[str]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return []
    out: list[str] = []
    for k in ("dependencies", "dev-dependencies"):
        if isinstance(data.get(k), dict):
            out += list(data[k])
    return out


def _deps_gemfile(text: str) -> list[str]:
    return re.findall(r"""^\s*gem\s+['"]([^'"]+)['"]""", text, re.M)


def _deps_composer(text: str) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out: list[str] = []
    if isinstance(data, dict):
        for k in ("require", "require-dev"):
            if isinstance(data.get(k), dict):
                out += list(data[k])
    return out


MANIFESTS = {"package.json": _deps_package_json, "pyproject.toml": _deps_pyproject, "go.mod": _deps_go_mod,
             "Cargo.toml": _deps_cargo, "Gemfile": _deps_gemfile, "composer.json": _deps_composer}


def project_signals(project: str | Path) -> tuple[list[Signal], list[str]]:
    """The signals of a project folder, strongest first, and notes."""
    from fnmatch import fnmatch

    from ..catalog.roots import SKIP_DIRS

    root = Path(project).expanduser()
    notes: list[str] = []
    langs: Counter[str] = Counter()
    found: dict[str, Signal] = {}

    def add(key: str, label: str, query: str, evidence: str, weight: float) -> None:
        cur = found.get(key)
        if cur is None:
            found[key] = Signal(key, label, query, evidence, weight)
            return
        if weight > cur.weight:   # a dependency names the tool more surely than a file does
            cur.label, cur.query, cur.weight = label, query, weight
            cur.evidence = evidence + ("" if len(cur.evidence) > 80 else f", {cur.evidence}")
        elif evidence not in cur.evidence and len(cur.evidence) < 80:
            cur.evidence += f", {evidence}"

    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        depth = len(rel_dir.parts)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and (not d.startswith(".") or d == ".github"
                                                                            or (d == "workflows" and
                                                                                here.name == ".github")))
        if depth >= MAX_DEPTH:
            dirnames[:] = []
        for f in filenames:
            seen += 1
            if seen > MAX_FILES:
                notes.append(f"looked at the first {MAX_FILES:,} files only")
                dirnames[:] = []
                break
            rel = (rel_dir / f).as_posix()
            ext = os.path.splitext(f)[1].lower()
            if ext in LANGUAGES:
                langs[LANGUAGES[ext][0]] += 1
            parse = MANIFESTS.get(f) or (_deps_requirements if fnmatch(f, "requirements*.txt") else None)
            if parse is not None and depth <= 3:
                text = _read_small(here / f)
                for dep in parse(text or ""):
                    hit = DEPENDENCIES.get(_norm(dep)) or DEPENDENCIES.get(dep)
                    if hit:
                        add(hit[0], hit[1], hit[2], f"{rel}: {dep}", 1.0)
                if parse is not _deps_requirements:
                    continue
            for pattern, key, label, query, weight in FILES:
                target = rel if "/" in pattern else f
                if fnmatch(target, pattern) or ("/" in pattern and fnmatch(rel, "*/" + pattern)):
                    add(key, label, query, rel, weight)
                    break
        if seen > MAX_FILES:
            break
    total = sum(langs.values())
    labels = {code: label for code, label in LANGUAGES.values()}
    for code, n in langs.most_common(4):
        share = n / total
        if n < 3 and share < 0.2:
            continue
        label = labels.get(code, code)
        query = LANGUAGE_QUERY.get(code, f"{label} code: conventions, tests and common errors")
        add(code, label, query, f"{n} {label} file{'s' if n != 1 else ''}", round(0.4 + 0.5 * share, 3))
    if (root / ".git").exists():
        add("git", "git", "git commit messages, branches and pull requests", ".git", 0.3)
    signals = sorted(found.values(), key=lambda s: (-s.weight, s.key))
    return signals, notes


# --- what a skill is for ----------------------------------------------------------------------------
# A proposal must be a skill *for* the project's stack: it names the technology of the signal
# that found it, and it is not about another stack (a skill for Expo apps, a generator that
# "detects .NET, Java, JavaScript, React, Python") that the project does not use. Words are
# matched on the skill's name, description and tags.

# technology key -> what names it in a skill's text (default: its label and key)
ALIASES: dict[str, str] = {
    "nextjs": r"next\.?js|next\s+js",
    "react": r"react(?![\s-]*native)",
    "react-native": r"react[\s-]*native",
    "expo": r"expo(?![\w-]*fp)",
    "javascript": r"javascript|node\.?js|\bnode\b",
    "typescript": r"typescript",
    "python": r"python",
    "go": r"golang|\bgo\s+(?:modules?|code|services?|projects?|tests?|programs?|apps?)\b",
    "rust": r"\brust\b|cargo",
    "java": r"\bjava\b(?!\s*script)|spring\s*boot|\bmaven\b|\bgradle\b",
    "kotlin": r"kotlin",
    "csharp": r"c#|\.net\b|dotnet|asp\.net",
    "ruby": r"\bruby\b",
    "php": r"\bphp\b",
    "swift": r"\bswift(?:ui)?\b",
    "dart": r"\bdart\b|flutter",
    "elixir": r"elixir|phoenix",
    "scala": r"\bscala\b",
    "vue": r"\bvue(?:\.?js)?\b",
    "svelte": r"svelte",
    "angular": r"angular",
    "nuxt": r"nuxt",
    "django": r"django",
    "flask": r"\bflask\b",
    "fastapi": r"fastapi",
    "rails": r"\brails\b",
    "laravel": r"laravel",
    "symfony": r"symfony",
    "github-actions": r"github[\s-]*actions?|github\s+workflows?",
    "gitlab-ci": r"gitlab",
    "compose": r"docker[\s-]*compose|compose\s+files?",
    "kubernetes": r"kubernetes|\bk8s\b|kubectl",
    "python-cli": r"\btyper\b|\bclick\b|command[\s-]*line",
    "aws": r"\baws\b|boto3|amazon web services",
    "tailwind": r"tailwind",
    "pytorch": r"pytorch|\btorch\b",
    "sklearn": r"scikit[\s-]*learn|sklearn",
    "git": r"\bgit\b",
    "make": r"makefile|\bmake\b",
    "shell": r"\bbash\b|shell\s+scripts?|\bsh\b",
}
# stacks: a skill about one of these is for projects that use it (tools such as Docker, CI or
# a cloud are not a stack: a Next.js skill that mentions Docker is still a Next.js skill)
STACKS = {"javascript", "typescript", "python", "go", "rust", "java", "kotlin", "csharp", "ruby", "php", "swift",
          "dart", "elixir", "scala", "nextjs", "react", "react-native", "expo", "vue", "svelte", "angular", "nuxt",
          "django", "flask", "fastapi", "rails", "laravel", "symfony", "express", "nestjs", "electron"}
# a stack brings the ones it is built on
IMPLIES = {"nextjs": {"react", "javascript", "typescript"}, "react": {"javascript"}, "typescript": {"javascript"},
           "react-native": {"react", "javascript", "expo"}, "expo": {"react-native", "react", "javascript"},
           "vue": {"javascript"}, "nuxt": {"vue", "javascript"}, "svelte": {"javascript"},
           "angular": {"typescript", "javascript"}, "express": {"javascript"}, "nestjs": {"typescript", "javascript"},
           "electron": {"javascript"}, "django": {"python"}, "flask": {"python"}, "fastapi": {"python"},
           "rails": {"ruby"}, "laravel": {"php"}, "symfony": {"php"}, "kotlin": {"java"}}
_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(key: str, label: str = "") -> re.Pattern[str]:
    pat = _PATTERNS.get(key)
    if pat is None:
        words = {re.escape(w) for w in (label.lower(), key.replace("-", " "), key) if w}
        text = ALIASES.get(key) or "|".join(rf"(?<![\w.]){w}(?![\w])" for w in sorted(words, key=len, reverse=True))
        pat = _PATTERNS[key] = re.compile(text, re.IGNORECASE)
    return pat


def _stack_labels() -> dict[str, str]:
    labels = {code: label for code, label in LANGUAGES.values()}
    labels.update({key: label for key, label, _ in DEPENDENCIES.values()})
    return labels


def stacks_named(text: str) -> set[str]:
    """The stacks (``STACKS``) a skill's text names."""
    labels = _stack_labels()
    return {k for k in STACKS if _pattern(k, labels.get(k, "")).search(text)}


def own_stacks(signals: list[Signal]) -> set[str]:
    """The stacks a project uses: its signals' and the ones they are built on."""
    own = {s.key for s in signals}
    for k in list(own):
        own |= IMPLIES.get(k, set())
    return own


def for_the_stack(text: str, name: str, signal: Signal | None, own: set[str]) -> str | None:
    """Why a skill (its name, and its name, description and tags as ``text``) is not for this
    project, or None when it is: it must name the signal's technology, name no stack the
    project does not use in its name, and name no more such stacks than stacks it uses."""
    named = stacks_named(text)
    foreign = named - own
    in_name = stacks_named(name.replace("-", " ")) - own
    if in_name:
        return f"is for {', '.join(sorted(in_name))}"
    if len(foreign) > len(named & own):
        return f"is mostly for {', '.join(sorted(foreign))}"
    if signal is not None and not _pattern(signal.key, signal.label).search(text):
        return f"does not name {signal.label}"
    return None


# --- choosing -------------------------------------------------------------------------------------

def pick(lib: Any, project: str | Path, *, limit: int = 8) -> PickResult:
    """Search the library with each signal's query; propose the skills that strong signals
    found as likely matches, then skills the usage log says worked; never a skill that keeps
    failing; at most two skills chosen for the same signal, so one framework does not take
    every place."""
    from ..errors import NotFoundError, SkillshelfError, ValidationError

    root = Path(project).expanduser()
    if not root.exists():
        raise NotFoundError(f"{root} does not exist", fix="pass the project folder with --for PATH")
    if not root.is_dir():
        raise ValidationError(f"{root} is not a folder", fix="pass the project folder with --for PATH")
    if not 1 <= int(limit) <= 50:
        raise ValidationError(f"-n {limit} is out of range", fix="pick from 1 to 50 skills (8 is the advice)")
    signals, notes = project_signals(root)
    own = own_stacks(signals)
    stats = lib.stats()
    usage = {u.id: u for u in stats.per_skill}
    failing = {u.id for u in stats.low_success}
    by: dict[str, list[tuple[float, Signal]]] = {}
    hits: dict[str, Any] = {}
    lexical_only = False
    off_stack: dict[str, str] = {}
    for s in signals[:MAX_SIGNALS]:
        res = lib.search(s.query, limit=5, log=False)
        # without vectors no hit can be "likely": the top lexical hit counts, at half weight
        lexical = res.degraded is not None and all(h.score == 0 for h in res.hits)
        lexical_only = lexical_only or lexical
        for rank, h in enumerate(res.hits):
            if h.wildcard or (h.match != "likely" and not (lexical and rank == 0)):
                continue
            why_not = for_the_stack(_text(h.name, h.description, h.tags), h.name, s, own)
            if why_not is not None:
                if s.weight >= STRONG and why_not.startswith("is "):
                    off_stack.setdefault(h.id, f"{h.name} {why_not}")
                continue
            # the stronger the signal and the closer the match, the more it counts
            contrib = s.weight * (0.5 + 0.5 * max(0.0, min(1.0, h.score))) / (1 + rank) * (0.5 if lexical else 1.0)
            by.setdefault(h.id, []).append((contrib, s))
            hits.setdefault(h.id, h)
    # a skill is proposed for what a strong signal found; weaker signals and other signals
    # that found it too add a little (a skill many generic searches find is not better for it)
    scores: dict[str, float] = {}
    for sid, contribs in by.items():
        if not any(sig.weight >= STRONG for _, sig in contribs):
            continue
        parts = sorted((c for c, _ in contribs), reverse=True)
        scores[sid] = parts[0] + 0.25 * sum(parts[1:])
    if lexical_only:
        notes.append("search ran without embeddings (lexical only): the picks are less sure; "
                     "`skillshelf doctor` says why")
    if len(signals) > MAX_SIGNALS:
        notes.append(f"searched for the {MAX_SIGNALS} strongest of {len(signals)} signals")
    left_out = [i for i in scores if i in failing]
    for i in left_out:
        u = usage[i]
        notes.append(f"left out {u.name}: it failed {u.failed} of {u.reports} reported uses")
        scores.pop(i)
    # outcomes: a skill that worked is worth more, and may be proposed on its record alone
    for u in stats.worked:
        if u.id in failing or u.success_rate is None or u.success_rate < 0.5:
            continue
        bonus = 0.3 * min(u.worked, 5) / 5 + 0.2 * u.success_rate
        scores[u.id] = scores.get(u.id, 0.0) + bonus
    per_signal: Counter[str] = Counter()
    picks: list[Pick] = []
    for sid in sorted(scores, key=lambda i: (-scores[i], i)):
        if len(picks) >= limit:
            break
        contribs = sorted(by.get(sid, []), key=lambda x: -x[0])
        primary = contribs[0][1].key if contribs else "usage"
        if per_signal[primary] >= 2:
            continue
        try:
            rec = lib.get(sid)
        except SkillshelfError:   # gone since it was logged
            continue
        if not rec.active or rec.expired or any(p.name == rec.name for p in picks):
            continue
        if not contribs and for_the_stack(_text(rec.name, rec.description, rec.tags), rec.name, None, own):
            continue          # it worked, but for a stack this project does not use
        per_signal[primary] += 1
        u = usage.get(sid)
        why = [f"{s.label} ({s.evidence})" for _, s in contribs[:2]]
        if u is not None and u.worked:
            why.append(f"worked {u.worked} of {u.reports} reported uses")
        desc = hits[sid].description if sid in hits else rec.description
        picks.append(Pick(rec.name, rec.id, rec.path, desc, round(scores[sid], 3),
                          "; ".join(why) or "chosen", [s.key for _, s in contribs],
                          u.worked if u else 0, u.reports if u else 0))
    shown = [why for sid, why in off_stack.items() if sid not in scores][:3]
    if shown:
        notes.append("left out as not for this project's stack: " + "; ".join(shown))
    if not signals:
        notes.append("no languages, frameworks or tool files recognised in this folder")
    if signals and not picks:
        notes.append("the library has no likely match for this project's signals: nothing to install")
    return PickResult(str(root.resolve()), signals, picks, notes)


def _text(name: str, description: str, tags: Any) -> str:
    return " ".join([name.replace("-", " "), description or "", " ".join(tags or [])])
