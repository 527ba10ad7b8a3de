"""Settings, read in one place: defaults < ``<home>/config.toml`` < environment < arguments.

Every knob has its default and a one-line reason next to it (``field(metadata=...)``);
``skillshelf config`` prints them.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from .errors import ConfigError
from .files import FileRefused, read_text_bounded
from .text import redact_userinfo

WRITE_POLICIES = ("read-only", "propose", "open")
# the embedding backends offered to users ("fake", a deterministic test backend, is accepted
# but not offered)
EMBEDDERS = ("minilm", "fastembed", "ollama", "openai", "none")
# the optional model judge (judge.py): off, a chat model over HTTP, or a local ONNX cross-encoder
JUDGE_BACKENDS = ("none", "ollama", "openai", "local")
# where a setting's value came from, lowest precedence first
ORIGINS = ("default", "file", "environment", "flag")


def _f(default: Any, why: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"why": why}, **kw)
    return field(default=default, metadata={"why": why}, **kw)


@dataclass(frozen=True)
class SearchConfig:
    rrf_k: int = _f(60, "RRF constant; 60 is the value from the RRF paper")
    lexical_weight: float = _f(1.0, "weight of the BM25 list in the fusion")
    dense_weight: float = _f(1.0, "weight of the embedding list in the fusion (with feedback it is as strong as BM25F)")
    candidates: int = _f(100, "hits taken from each retriever before fusion")
    ranked: int = _f(120, "candidates (the best by fused rank) the fitted ranker scores; the rest are left out"
                     " (scoring all ~175 measured the same quality, bench/ranker.py, at a tenth of a search's time)")
    weight_name: float = _f(4.0, "BM25 column weight of the name (tokens)")
    weight_description: float = _f(3.0, "BM25 column weight of the description")
    weight_tags: float = _f(2.0, "BM25 column weight of tags")
    weight_headings: float = _f(1.5, "BM25 column weight of body headings")
    weight_body: float = _f(1.0, "BM25 column weight of the body; the body matters most, but below metadata")
    prf_weight: float = _f(0.5, "pull of the top lexical hits on the query vector (Rocchio feedback; 0 = off)")
    prf_docs: int = _f(3, "how many top lexical hits feed the query vector")
    body_vector_tokens: int = _f(128, "tokens of each body's opening embedded as a second vector, scored max-sim"
                                      " with the metadata vector (0 = off: indexing ~2.5x faster, quality lower)")
    sq8_above: int = _f(20_000, "above this many skills, vectors go in a faiss 8-bit index when faiss-cpu is"
                               " installed (4x less memory, approximate scores); 0 = always exact float32")
    mmr_redundancy_floor: float = _f(0.8, "cosine above which two hits count as redundant in MMR")
    mmr_lambda_find: float = _f(0.7, "MMR relevance/diversity balance for find")
    mmr_lambda_brainstorm: float = _f(0.45, "MMR balance for brainstorm: more variety")
    recency_window: int = _f(10, "how many recent recommendations the recency penalty looks at")
    recency_penalty: float = _f(0.15, "score fraction taken per recent appearance (skills reported as worked are exempt)")
    recency_same_meaning: float = _f(0.70, "request cosine at or above which a recent request counts as a repeat of this"
                                     " one (a paraphrase), exempt from the recency penalty as the same text is;"
                                     " above 1 turns it off")
    wildcards: int = _f(2, "random picks from outside the relevant set in brainstorm mode")
    description_chars: int = _f(160, "description length shown in search hits (tokens cost money)")
    confident_threshold: float = _f(0.0, "a cosine cut for `match`/`confident` instead of the built-in model (for"
                                         " another embedding model; 0 = the model, see BENCHMARKS.md)")
    learn_from_outcomes: bool = _f(True, "reorder the hits retrieval found by the outcomes reported for similar"
                                         " earlier requests (bounded, decaying, capped per client; see README)")
    learning_weight: float = _f(0.2, "the most one client's outcomes can move a hit's relative fused score (top"
                                     " hit = 1.0)")
    learning_weight_agreed: float = _f(0.5, "the most outcomes can move a hit's relative fused score when two or"
                                            " more clients agree (each with a fresh report on a similar request)")
    learning_similarity: float = _f(0.55, "request cosine below which an earlier request counts as unrelated"
                                          " (full weight from 0.80; paraphrases of one need: median 0.83)")
    learning_half_life_days: float = _f(90.0, "an outcome report's weight halves over this many days")
    learning_client_cap: float = _f(1.5, "the most one client's reports count for one skill, in fresh reports on"
                                         " the same request")
    learning_max_lift: int = _f(3, "places a promotion (or demotion) can pass for one client; n clients that agree"
                                " pass up to this x n^2 (3, 12, 27): one client is a hint, agreement compounds")


@dataclass(frozen=True)
class TrustConfig:
    block: str = _f("none", "hide skills whose audit found this risk or worse from agents until a person trusts them: "
                            "none (warn only) | high | medium")


TRUST_BLOCKS = ("none", "high", "medium")


@dataclass(frozen=True)
class EvalConfig:
    min_recall: float = _f(0.8, "`skillshelf eval` fails a skill whose should-trigger queries find it in the top k less"
                                " often than this")
    max_false: float = _f(0.2, "`skillshelf eval` fails a skill that comes up in the top k for more than this share of"
                               " its should-not-trigger queries")
    min_reports: int = _f(5, "outcome reports each of two versions needs before the newer one can be called worse"
                             " (and their 95% Wilson intervals must not overlap)")


@dataclass(frozen=True)
class EvolutionConfig:
    findability: str = _f("warn", "a FIX, DERIVE or MERGE that loses more than one of a skill's should-trigger eval"
                                  " queries: warn (the result and the draft say so) | block (refused)")


FINDABILITY = ("warn", "block")


@dataclass(frozen=True)
class SourcesConfig:
    github_base: str = _f("https://github.com", "where `sources add owner/repo` points (a GitHub Enterprise URL works)")


@dataclass(frozen=True)
class JudgeConfig:
    backend: str = _f("none", "optional model judge of the shortlist: none | ollama | openai | local (off by default:"
                              " search results are then exactly the plain pipeline's)")
    url: str = _f("", "base URL of the chat endpoint (ollama: http://127.0.0.1:11434; openai-compatible: a URL"
                      " ending in /v1, default https://api.openai.com/v1)")
    model: str = _f("", "chat model name (ollama / openai); a rerank of 10 hits sends ~1.1k tokens and gets ~0.5k"
                          " back")
    api_key: str = _f("", "API key of an openai-compatible endpoint (or SKILLSHELF_JUDGE_API_KEY, OPENAI_API_KEY)")
    timeout: float = _f(30.0, "seconds the judge may take before the plain order is returned, flagged 'timeout'")
    candidates: int = _f(10, "at most this many hits of the shortlist go to the judge (the rest keep their place)")
    soft_filter_top: int = _f(4, "the soft filter marks this many top hits likely / weak (likely first, none dropped)")
    description_chars: int = _f(300, "description characters per candidate in the prompt (tokens cost money)")
    model_path: str = _f("", "local: an ONNX cross-encoder file (query, passage) -> relevance logit; nothing is"
                             " fetched")
    tokenizer_path: str = _f("", "local: its tokenizer.json (default: the bundled MiniLM WordPiece tokenizer, the"
                                 " vocabulary of the ms-marco MiniLM cross-encoders)")
    audit: bool = _f(False, "also ask the chat model (ollama / openai) for a second opinion on each skill the audit"
                            " rules did not find high: it can add a finding, never remove one (off by default)")


@dataclass(frozen=True)
class Config:
    home: Path = _f(Path(platformdirs.user_data_dir("skillshelf")), "where the workspace and database live")
    roots: list[Path] = _f([], "extra read-only skill roots")
    client_roots: bool = _f(False, "also scan the standard client folders (~/.claude/skills, .agents/skills, ...)")
    canonical_prefixes: list[str] = _f([], "path prefixes that win name clashes")
    write_policy: str = _f("propose", "what agents may write: read-only | propose | open")
    embedder: str = _f("minilm", "embedding backend by name: minilm | fastembed | ollama | openai | none")
    embedder_model: str = _f("", "model name for fastembed / ollama / openai backends")
    embedder_url: str = _f("", "base URL for ollama / openai backends")
    embedder_precision: str = _f("int8", "minilm: 'int8' (an 8-bit copy derived once: faster, less memory) or 'float32'")
    embedder_path: str = _f("", "local model: an ONNX file (minilm) or a model folder (fastembed); nothing is fetched")
    embedder_api_key: str = _f("", "API key for an openai-compatible backend (or OPENAI_API_KEY)")
    duplicate_threshold: float = _f(0.85, "cosine at or above which a new skill is reported as a near duplicate")
    hash_queries: bool = _f(False, "store a hash instead of the query text in the usage log")
    low_success_min_uses: int = _f(3, "reports needed before a skill can count as low-success")
    low_success_rate: float = _f(0.5, "success rate under which a skill is a rewrite candidate")
    auto_sync: bool = _f(True, "keep the index up to date with the files: a one-shot command scans before its first "
                               "query; a server (or a library used again) learns of changes from file-system events "
                               "and rescans only then, plus every 10 minutes")
    max_body_bytes: int = _f(200_000, "largest skill body an agent may write")
    http_token: str = _f("", "bearer token required by the HTTP server on a non-loopback bind")
    store: str = _f("", "the store: empty for the local SQLite library in the home, or a postgresql:// URL "
                        "of a team store shared by several servers")
    search: SearchConfig = _f(SearchConfig(), "search knobs")
    judge: JudgeConfig = _f(JudgeConfig(), "the optional model judge (rerank, soft filter)")
    trust: TrustConfig = _f(TrustConfig(), "what agents see of skills whose audit found a risk")
    sources: SourcesConfig = _f(SourcesConfig(), "collections fetched from git or archives (`skillshelf sources`)")
    eval: EvalConfig = _f(EvalConfig(), "trigger evals: the floor `skillshelf eval` holds skills to")
    evolution: EvolutionConfig = _f(EvolutionConfig(), "what a change to a skill is held to before it lands")
    # Not settings: where each setting came from (``ORIGINS``; "search.x" for nested ones),
    # and, per root path, where that root came from. A root given for one command ("flag")
    # must exist; a saved one ("file", "environment") that has gone is skipped with a warning.
    origins: dict[str, str] = field(default_factory=dict, compare=False, repr=False, metadata={"internal": True})
    root_origins: dict[str, str] = field(default_factory=dict, compare=False, repr=False,
                                         metadata={"internal": True})

    def origin(self, key: str) -> str:
        """Where setting ``key`` came from: default | file | environment | flag (several
        joined by " + " for roots)."""
        return self.origins.get(key, "default")

    def missing_roots(self) -> list["MissingRoot"]:
        """Saved roots (config file or environment) that are no longer folders."""
        out = []
        for p in self.roots:
            origin = self.root_origins.get(str(p), "flag")
            if origin == "flag" or p.is_dir():
                continue
            out.append(MissingRoot(p, origin, "is not a folder" if p.exists() else "does not exist", self))
        return out

    @property
    def workspace(self) -> Path:
        # with a team store: this server's copy of the team workspace (team.Mirror), never the
        # local library's own skills, which the copy would set aside
        return self.home / "team" / "workspace" if self.store else self.home / "skills"

    @property
    def drafts(self) -> Path:
        return self.home / "team" / "drafts" if self.store else self.home / "drafts"

    @property
    def db_path(self) -> Path:
        return self.home / "skillshelf.db"

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"


@dataclass(frozen=True)
class MissingRoot:
    """A saved root that is not a folder any more: commands go on without it."""

    path: Path
    origin: str          # file | environment
    problem: str         # "does not exist" | "is not a folder"
    config: Config

    @property
    def where(self) -> str:
        if self.origin == "environment":
            return f"from {_ENV['roots']}"
        return f"saved in {self.config.config_path}"

    @property
    def fix(self) -> str:
        if self.origin == "environment":
            return f"restore the folder, or take it out of {_ENV['roots']}"
        home = "" if self.config.origin("home") == "default" else f" --home {self.config.home}"
        return f"restore the folder, or forget it with `skillshelf{home} roots remove {self.path}`"

    @property
    def message(self) -> str:
        return f"skill root {self.path} ({self.where}) {self.problem}"

    def as_dict(self) -> dict[str, str]:
        return {"path": str(self.path), "origin": self.origin, "problem": self.problem,
                "message": self.message, "fix": self.fix}


def _plain(value: Any) -> Any:
    """A value as a person writes it: paths as strings, lists of them as lists of strings."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# the settings that hold a credential: embedder_api_key, judge.api_key, http_token (and any
# later *_key, *_token, *_secret, *_password); not body_vector_tokens or tokenizer_path
_SECRET = re.compile(r"(?:^|_)(?:key|token|secret|password)$")


def secret(name: str) -> bool:
    """Whether setting ``name`` (``judge.api_key`` or ``api_key``) holds a credential, shown masked."""
    return bool(_SECRET.search(name.rsplit(".", 1)[-1]))


def describe(cfg: Config) -> list[tuple[str, Any, str, str]]:
    """(key, value, reason, origin) for every setting, nested ones as ``search.x``; paths as
    plain strings, secrets masked."""
    rows: list[tuple[str, Any, str, str]] = []
    for f in dataclasses.fields(cfg):
        if f.metadata.get("internal"):
            continue
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            for sf in dataclasses.fields(value):
                key = f"{f.name}.{sf.name}"
                sv = getattr(value, sf.name)
                shown = "***" if secret(sf.name) and sv else sv
                rows.append((key, shown, sf.metadata.get("why", ""), cfg.origin(key)))
        else:
            shown = "***" if secret(f.name) and value else _plain(value)
            if f.name == "store" and value:    # a URL may carry a password
                shown = redact_userinfo(value)
            rows.append((f.name, shown, f.metadata.get("why", ""), cfg.origin(f.name)))
    return rows


# config.toml holds settings and saved roots: a file past this is not one a person wrote
CONFIG_MAX_BYTES = 1 << 20


def load_toml(path: Path) -> dict[str, Any]:
    """``config.toml`` read (bounded) and parsed; ``ConfigError`` naming the problem and the fix."""
    keeps = "it also holds the saved roots and settings, so deleting it forgets them"
    try:
        return tomllib.loads(read_text_bounded(path, CONFIG_MAX_BYTES))
    except FileRefused as exc:     # too large, or not UTF-8
        raise ConfigError(f"the settings file cannot be read: {exc.message}",
                          fix=f"make it a short UTF-8 text of the settings you need ({keeps})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", fix=f"fix the line it names ({keeps})") from None


def saved_entries(home: Path | str) -> list[Path]:
    """The roots as ``<home>/config.toml`` writes them (one inside the home relative to it)."""
    path = Path(home) / "config.toml"
    if not path.exists():
        return []
    data = load_toml(path)
    return _coerce("roots", [], data.get("roots", []))


def anchored(home: Path | str, raw: Path) -> Path:
    """A saved root as a path. One inside the home is saved relative to it (``add_root``: the home
    can be moved or copied) and read under it. An absolute ``<old home>/sources/LABEL`` an older
    version saved reads as this home's ``sources/LABEL`` once the old home has gone (the home moved);
    while that home is there, the root stays its folder (another home's, missing or not)."""
    if not raw.is_absolute():
        return Path(home) / raw
    mine = Path(home) / "sources" / raw.name
    if raw.parent.name == "sources" and not raw.parent.parent.exists() and mine.is_dir():
        return mine
    return raw


def saved_roots(home: Path | str) -> list[Path]:
    """The roots saved in ``<home>/config.toml`` (not those from the environment or flags)."""
    return [anchored(home, p) for p in saved_entries(home)]


def ensure_home(cfg: Config) -> str:
    """Create the home folder if needed. When there was no database yet, the note to say so (else
    ""): a home with nothing of a library in it is a new, empty library (a typo in the home looks like
    one), a home that holds settings or skills but no database gets a new index of its files (the
    database was deleted or moved: the usage history starts empty). A home that cannot be created
    is a ConfigError naming the fix."""
    note = ""
    if not cfg.db_path.exists():
        home = Path(cfg.home)
        kept = [n for n in ("config.toml", "decisions.json") if (home / n).is_file()]
        if kept or (cfg.workspace.is_dir() and any(cfg.workspace.iterdir())):
            note = (f"there was no database at {cfg.db_path}; a new one indexes the files "
                    "(the usage history starts empty)")
        else:
            note = (f"there was no library at {cfg.home}; created a new, empty one"
                    " (check --home / SKILLSHELF_HOME if you meant another)")
    try:
        cfg.workspace.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the library home {cfg.home}: {exc.strerror or exc}",
                          fix="pass --home (or set SKILLSHELF_HOME) to a folder you can write") from None
    return note


def save_setting(home: Path, key: str, value: Any) -> Path:
    """Set one top-level key in ``<home>/config.toml`` (atomically; other settings are kept,
    comments are not)."""
    import tomli_w

    from .files import atomic_write

    path = Path(home) / "config.toml"
    data: dict[str, Any] = {}
    if path.exists():
        data = load_toml(path)
    if value is None:
        data.pop(key, None)
    else:
        data[key] = value
    atomic_write(path, tomli_w.dumps(data))
    return path


def _coerce(name: str, kind: Any, value: Any) -> Any:
    default = kind
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off", ""):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, Path):
            return Path(value).expanduser()
        if isinstance(default, list):
            items = value.split(os.pathsep) if isinstance(value, str) else list(value)
            return [Path(v).expanduser() if name == "roots" else str(v) for v in items if str(v)]
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name!r} has a bad value {value!r}",
                          fix=f"use a value like {default!r}") from None


_ENV = {
    "write_policy": "SKILLSHELF_WRITE_POLICY",
    "embedder": "SKILLSHELF_EMBEDDER",
    "embedder_model": "SKILLSHELF_EMBEDDER_MODEL",
    "embedder_url": "SKILLSHELF_EMBEDDER_URL",
    "embedder_path": "SKILLSHELF_EMBEDDER_PATH",
    "embedder_precision": "SKILLSHELF_EMBEDDER_PRECISION",
    "embedder_api_key": "SKILLSHELF_EMBEDDER_API_KEY",
    "roots": "SKILLSHELF_ROOTS",
    "client_roots": "SKILLSHELF_CLIENT_ROOTS",
    "hash_queries": "SKILLSHELF_HASH_QUERIES",
    "http_token": "SKILLSHELF_HTTP_TOKEN",
    "store": "SKILLSHELF_STORE",
    "auto_sync": "SKILLSHELF_AUTO_SYNC",
}
# the judge's settings from the environment (judge.<key>)
_JUDGE_ENV = {
    "backend": "SKILLSHELF_JUDGE",
    "url": "SKILLSHELF_JUDGE_URL",
    "model": "SKILLSHELF_JUDGE_MODEL",
    "api_key": "SKILLSHELF_JUDGE_API_KEY",
    "timeout": "SKILLSHELF_JUDGE_TIMEOUT",
}


def load(home: Path | str | None = None, **overrides: Any) -> Config:
    """Build the configuration. ``overrides`` with value None are ignored. Each value's
    origin (default, file, environment, flag: an argument or override) is kept in
    ``Config.origins``."""
    origins: dict[str, str] = {}
    root_origins: dict[str, str] = {}
    if home:
        origins["home"] = "flag"
    elif os.environ.get("SKILLSHELF_HOME"):
        origins["home"] = "environment"
    home_path = Path(home or os.environ.get("SKILLSHELF_HOME") or Config().home).expanduser()
    if home_path.exists() and not home_path.is_dir():
        raise ConfigError(f"home {home_path} is a file, not a folder", fix="pass --home with a folder path")
    base = Config(home=home_path.resolve() if home_path.exists() else home_path.absolute())
    values: dict[str, Any] = {}
    search_values: dict[str, Any] = {}
    judge_values: dict[str, Any] = {}
    trust_values: dict[str, Any] = {}
    sources_values: dict[str, Any] = {}
    eval_values: dict[str, Any] = {}
    evolution_values: dict[str, Any] = {}
    cfg_file = base.config_path
    if cfg_file.exists():
        data = load_toml(cfg_file)
        names = {f.name: f for f in dataclasses.fields(Config) if not f.metadata.get("internal")}
        snames = {f.name: f for f in dataclasses.fields(SearchConfig)}
        jnames = {f.name for f in dataclasses.fields(JudgeConfig)}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key == "search" and isinstance(value, dict):
                for sk, sv in value.items():
                    sk = sk.replace("-", "_")
                    if sk not in snames:
                        raise ConfigError(f"{cfg_file}: unknown setting search.{sk}",
                                          fix="see `skillshelf config` for the settings")
                    search_values[sk] = _coerce(f"search.{sk}", getattr(SearchConfig(), sk), sv)
                    origins[f"search.{sk}"] = "file"
            elif key == "judge" and isinstance(value, dict):
                for jk, jv in value.items():
                    jk = jk.replace("-", "_")
                    if jk not in jnames:
                        raise ConfigError(f"{cfg_file}: unknown setting judge.{jk}",
                                          fix="see `skillshelf config` for the settings")
                    judge_values[jk] = _coerce(f"judge.{jk}", getattr(JudgeConfig(), jk), jv)
                    origins[f"judge.{jk}"] = "file"
            elif key == "trust" and isinstance(value, dict):
                for tk, tv in value.items():
                    if tk != "block":
                        raise ConfigError(f"{cfg_file}: unknown setting trust.{tk}",
                                          fix="the trust section has one setting: block = \"none\" | \"high\" | \"medium\"")
                    trust_values[tk] = str(tv)
                    origins[f"trust.{tk}"] = "file"
            elif key == "sources" and isinstance(value, dict):
                for sk, sv in value.items():
                    if sk.replace("-", "_") != "github_base":
                        raise ConfigError(f"{cfg_file}: unknown setting sources.{sk}",
                                          fix="the sources section has one setting: github_base = \"https://...\"")
                    sources_values["github_base"] = str(sv)
                    origins["sources.github_base"] = "file"
            elif key == "eval" and isinstance(value, dict):
                enames = {f.name for f in dataclasses.fields(EvalConfig)}
                for ek, ev in value.items():
                    ek = ek.replace("-", "_")
                    if ek == "guard":
                        raise ConfigError(f"{cfg_file}: eval.guard is now evolution.findability",
                                          fix='write [evolution] findability = "warn" or "block" instead')
                    if ek not in enames:
                        raise ConfigError(f"{cfg_file}: unknown setting eval.{ek}",
                                          fix="the eval section has: min_recall, max_false, min_reports")
                    eval_values[ek] = _coerce(f"eval.{ek}", getattr(EvalConfig(), ek), ev)
                    origins[f"eval.{ek}"] = "file"
            elif key == "evolution" and isinstance(value, dict):
                for vk, vv in value.items():
                    if vk != "findability":
                        raise ConfigError(f"{cfg_file}: unknown setting evolution.{vk}",
                                          fix='the evolution section has one setting: findability = "warn" | "block"')
                    evolution_values[vk] = str(vv)
                    origins[f"evolution.{vk}"] = "file"
            elif key in names and key != "home":
                values[key] = _coerce(key, getattr(base, key), value)
                origins[key] = "file"
            else:
                raise ConfigError(f"{cfg_file}: unknown setting {key!r}", fix="see `skillshelf config` for the settings")
    if "roots" in values:       # (only the file's so far) a root saved relative to the home is under it
        values["roots"] = [anchored(base.home, p) for p in values["roots"]]
    for key, env in _ENV.items():
        if os.environ.get(env) not in (None, ""):
            values[key] = _coerce(key, getattr(base, key), os.environ[env])
            origins[key] = "environment"
    if not values.get("embedder_api_key") and os.environ.get("OPENAI_API_KEY"):
        values["embedder_api_key"] = os.environ["OPENAI_API_KEY"]
        origins["embedder_api_key"] = "environment"
    for jk, env in _JUDGE_ENV.items():
        if os.environ.get(env) not in (None, ""):
            judge_values[jk] = _coerce(f"judge.{jk}", getattr(JudgeConfig(), jk), os.environ[env])
            origins[f"judge.{jk}"] = "environment"
    if not judge_values.get("api_key") and os.environ.get("OPENAI_API_KEY"):
        judge_values["api_key"] = os.environ["OPENAI_API_KEY"]
        origins["judge.api_key"] = "environment"
    root_origins = {str(p): origins["roots"] for p in values.get("roots", [])}
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "roots":
            extra = [Path(v).expanduser() for v in value]
            values["roots"] = list(values.get("roots", [])) + extra
            root_origins.update({str(p): "flag" for p in extra})
            origins["roots"] = " + ".join(sorted(set(root_origins.values()), key=ORIGINS.index))
        else:
            values[key] = value
            origins[key] = "flag"
    if search_values:
        values["search"] = dataclasses.replace(SearchConfig(), **search_values)
    if judge_values and origins.get("judge") != "flag":   # a JudgeConfig given as an argument is taken whole
        values["judge"] = dataclasses.replace(JudgeConfig(), **judge_values)
    if os.environ.get("SKILLSHELF_TRUST_BLOCK"):
        trust_values["block"] = os.environ["SKILLSHELF_TRUST_BLOCK"]
        origins["trust.block"] = "environment"
    if trust_values and origins.get("trust") != "flag":
        values["trust"] = dataclasses.replace(TrustConfig(), **trust_values)
    if sources_values and origins.get("sources") != "flag":
        values["sources"] = SourcesConfig(**sources_values)
    if eval_values and origins.get("eval") != "flag":
        values["eval"] = dataclasses.replace(EvalConfig(), **eval_values)
    if evolution_values and origins.get("evolution") != "flag":
        values["evolution"] = EvolutionConfig(**evolution_values)
    cfg = dataclasses.replace(base, **values, origins=origins, root_origins=root_origins)
    ev = cfg.eval
    if not (0 <= ev.min_recall <= 1 and 0 <= ev.max_false <= 1) or ev.min_reports < 1:
        where = next((_where(cfg, f"eval.{k}") for k in ("min_recall", "max_false", "min_reports")
                      if cfg.origin(f"eval.{k}") != "default"), "")
        raise ConfigError(f"eval settings out of range (min_recall {ev.min_recall}, max_false {ev.max_false},"
                          f" min_reports {ev.min_reports}){where}",
                          fix="min_recall and max_false are between 0 and 1; min_reports is 1 or more")
    if cfg.evolution.findability not in FINDABILITY:
        raise ConfigError(f"unknown evolution.findability {cfg.evolution.findability!r}"
                          f"{_where(cfg, 'evolution.findability')}",
                          fix='use "warn" (the result says what the change loses) or "block" (such a change is refused)')
    if cfg.trust.block not in TRUST_BLOCKS:
        raise ConfigError(f"unknown trust.block {cfg.trust.block!r}{_where(cfg, 'trust.block')}",
                          fix="use none (warn only), high or medium")
    if cfg.write_policy not in WRITE_POLICIES:
        raise ConfigError(f"unknown write policy {cfg.write_policy!r}{_where(cfg, 'write_policy')}",
                          fix=f"use one of {', '.join(WRITE_POLICIES)}")
    if cfg.store and not cfg.store.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"unknown store {cfg.store.split('://')[0]!r}{_where(cfg, 'store')}",
                          fix="leave store empty for the local library, or give a postgresql://USER:PASSWORD@HOST/DB URL")
    if cfg.judge.backend not in JUDGE_BACKENDS:
        origin = cfg.origin("judge.backend")
        where = {"file": f" (in {cfg.config_path})", "environment": f" (from {_JUDGE_ENV['backend']})"}.get(origin, "")
        raise ConfigError(f"unknown judge backend {cfg.judge.backend!r}{where}",
                          fix=f"use one of {', '.join(JUDGE_BACKENDS)}")
    if cfg.judge.timeout <= 0:
        raise ConfigError(f"judge.timeout {cfg.judge.timeout} must be more than 0 seconds",
                          fix="set judge.timeout in config.toml to the seconds the judge may take (default 30)")
    if cfg.embedder not in EMBEDDERS:
        from .embeddings import available  # the registry: test and registered backends too

        if cfg.embedder not in available():
            raise ConfigError(f"unknown embedder {cfg.embedder!r}{_where(cfg, 'embedder')}",
                              fix=f"use one of {', '.join(EMBEDDERS)}")
    return cfg


def _where(cfg: Config, key: str) -> str:
    """' (in <file>)' / ' (from ENV)' for a message about setting ``key``."""
    origin = cfg.origin(key)
    if origin == "file":
        return f" (in {cfg.config_path})"
    if origin == "environment":
        return f" (from {_ENV.get(key, 'the environment')})"
    return ""


def add_root(home: Path | str, path: str | Path) -> list[str]:
    """Save a read-only root in ``home``'s config.toml; the saved roots after it."""
    p = Path(path).expanduser().resolve()
    if not p.exists():
        raise ConfigError(f"{p} does not exist", fix="pass the folder that holds skill folders")
    if not p.is_dir():
        raise ConfigError(f"{p} is not a folder", fix="pass the folder that holds skill folders")
    h = Path(home).expanduser().resolve()
    roots = [str(r) for r in saved_entries(home)]
    if p not in {anchored(h, Path(r)).resolve() for r in roots}:
        roots.append(p.relative_to(h).as_posix() if h in p.parents else str(p))
        save_setting(Path(home), "roots", roots)
    return [str(anchored(h, Path(r))) for r in roots]


def remove_root(home: Path | str, path: str | Path, labels: dict[str, str] | None = None) -> list[str]:
    """Forget a saved root, given by its path (it may no longer exist) or by its label
    (``labels``: label -> path of the roots now open); the saved roots after it."""
    from .errors import NotFoundError

    roots = [str(r) for r in saved_entries(home)]
    target = Path(path).expanduser().resolve()  # strict=False: a root that has gone still resolves
    # as read (under the home), or as written (an older absolute path that has gone)
    match = [r for r in roots if target in {anchored(home, Path(r)).resolve(), Path(home, r).expanduser().resolve()}]
    if not match and labels and str(path) in labels:
        match = [r for r in roots if anchored(home, Path(r)).resolve() == Path(labels[str(path)])]
    if not match:
        raise NotFoundError(f"{target} is not a saved root", suggestions=roots[:3] or None,
                            fix=None if roots else "no roots are saved (see `skillshelf roots list`)")
    roots = [r for r in roots if r not in match]
    save_setting(Path(home), "roots", roots or None)
    return [str(anchored(home, Path(r))) for r in roots]
