"""Settings, read in one place: defaults < ``<home>/config.toml`` < environment < arguments.

Every knob has its default and a one-line reason next to it (``field(metadata=...)``);
``skillshelf config`` prints them.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from .errors import ConfigError

WRITE_POLICIES = ("read-only", "propose", "open")


def _f(default: Any, why: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"why": why}, **kw)
    return field(default=default, metadata={"why": why}, **kw)


@dataclass(frozen=True)
class SearchConfig:
    rrf_k: int = _f(60, "RRF constant; 60 is the value from the RRF paper and the seeds")
    lexical_weight: float = _f(1.0, "weight of the BM25 list in the fusion")
    dense_weight: float = _f(1.0, "weight of the embedding list in the fusion (with feedback it is as strong as BM25F)")
    candidates: int = _f(100, "hits taken from each retriever before fusion")
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
    mmr_lambda_find: float = _f(0.7, "MMR relevance/diversity balance for find (the_librarian)")
    mmr_lambda_brainstorm: float = _f(0.45, "MMR balance for brainstorm: more variety")
    recency_window: int = _f(10, "how many recent recommendations the recency penalty looks at")
    recency_penalty: float = _f(0.15, "score fraction taken per recent appearance (skills reported as worked are exempt)")
    wildcards: int = _f(2, "random picks from outside the relevant set in brainstorm mode")
    description_chars: int = _f(160, "description length shown in search hits (tokens cost money)")
    confident_threshold: float = _f(0.0, "calibrated confidence cut; see BENCHMARKS.md (0 = use the built-in value)")


@dataclass(frozen=True)
class Config:
    home: Path = _f(Path(platformdirs.user_data_dir("skillshelf")), "where the workspace and database live")
    roots: list[Path] = _f([], "extra read-only skill roots")
    client_roots: bool = _f(False, "also scan the standard client folders (~/.claude/skills, .agents/skills, ...)")
    canonical_prefixes: list[str] = _f([], "path prefixes that win name clashes (as in the_librarian)")
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
    auto_sync: bool = _f(True, "check files before each query (cheap stat scan) so editor changes are picked up")
    max_body_bytes: int = _f(200_000, "largest skill body an agent may write")
    http_token: str = _f("", "bearer token required by the HTTP server on a non-loopback bind")
    search: SearchConfig = _f(SearchConfig(), "search knobs")

    @property
    def workspace(self) -> Path:
        return self.home / "skills"

    @property
    def drafts(self) -> Path:
        return self.home / "drafts"

    @property
    def db_path(self) -> Path:
        return self.home / "skillshelf.db"

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"


def describe(cfg: Config) -> list[tuple[str, Any, str]]:
    """(key, value, reason) for every setting, nested ones as ``search.x``."""
    rows: list[tuple[str, Any, str]] = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            for sf in dataclasses.fields(value):
                rows.append((f"{f.name}.{sf.name}", getattr(value, sf.name), sf.metadata.get("why", "")))
        else:
            shown = "***" if ("key" in f.name or "token" in f.name) and value else value
            rows.append((f.name, shown, f.metadata.get("why", "")))
    return rows


def save_setting(home: Path, key: str, value: Any) -> Path:
    """Set one top-level key in ``<home>/config.toml`` (atomically; other settings are kept,
    comments are not)."""
    import tomli_w

    from .files import atomic_write

    path = Path(home) / "config.toml"
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}", fix="fix the file or delete it") from None
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
    "auto_sync": "SKILLSHELF_AUTO_SYNC",
}


def load(home: Path | str | None = None, **overrides: Any) -> Config:
    """Build the configuration. ``overrides`` with value None are ignored."""
    home_path = Path(home or os.environ.get("SKILLSHELF_HOME") or Config().home).expanduser()
    if home_path.exists() and not home_path.is_dir():
        raise ConfigError(f"home {home_path} is a file, not a folder", fix="pass --home with a folder path")
    base = Config(home=home_path.resolve() if home_path.exists() else home_path.absolute())
    values: dict[str, Any] = {}
    search_values: dict[str, Any] = {}
    cfg_file = base.config_path
    if cfg_file.exists():
        try:
            data = tomllib.loads(cfg_file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{cfg_file} is not valid TOML: {exc}", fix="fix the file or delete it") from None
        names = {f.name: f for f in dataclasses.fields(Config)}
        snames = {f.name: f for f in dataclasses.fields(SearchConfig)}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key == "search" and isinstance(value, dict):
                for sk, sv in value.items():
                    sk = sk.replace("-", "_")
                    if sk not in snames:
                        raise ConfigError(f"{cfg_file}: unknown setting search.{sk}",
                                          fix="see `skillshelf config` for the settings")
                    search_values[sk] = _coerce(f"search.{sk}", getattr(SearchConfig(), sk), sv)
            elif key in names and key != "home":
                values[key] = _coerce(key, getattr(base, key), value)
            else:
                raise ConfigError(f"{cfg_file}: unknown setting {key!r}", fix="see `skillshelf config` for the settings")
    for key, env in _ENV.items():
        if os.environ.get(env) not in (None, ""):
            values[key] = _coerce(key, getattr(base, key), os.environ[env])
    if not values.get("embedder_api_key") and os.environ.get("OPENAI_API_KEY"):
        values["embedder_api_key"] = os.environ["OPENAI_API_KEY"]
    for key, value in overrides.items():
        if value is None:
            continue
        if key == "roots":
            values["roots"] = list(values.get("roots", [])) + [Path(v).expanduser() for v in value]
        else:
            values[key] = value
    if search_values:
        values["search"] = dataclasses.replace(SearchConfig(), **search_values)
    cfg = dataclasses.replace(base, **values)
    if cfg.write_policy not in WRITE_POLICIES:
        raise ConfigError(f"unknown write policy {cfg.write_policy!r}",
                          fix=f"use one of {', '.join(WRITE_POLICIES)}")
    return cfg
