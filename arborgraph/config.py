"""The one root configuration, a sub-model per stage, each stage with its own seed.

Sources, weakest first: defaults, a TOML/YAML/JSON file, ``ARBORGRAPH_*`` environment
variables (nested with ``__``, e.g. ``ARBORGRAPH_CHUNKING__TARGET_TOKENS=300``), then
explicit overrides (CLI flags). The environment is read only when :func:`load_config`
is called, never at import.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from arborgraph.core.errors import ConfigError
from arborgraph.models.embedding import EmbeddingConfig
from arborgraph.llm.config import LLMConfig
from ingest.chunking import ChunkingConfig
from raptor import RaptorConfig
from graphrag import GraphConfig
from graphrag.config import GlobalSearchConfig, GraphSearchConfig
from graphrag.extract import LLMExtractorConfig, RuleExtractorConfig

ENV_PREFIX = "ARBORGRAPH_"
# settings of the user-level embedding cache: left out of an index's manifest
SHARED_CACHE_SETTINGS = ("shared_cache", "shared_cache_max_mb", "shared_cache_dir")


class IngestConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_file_mb: float = Field(
        50.0, gt=0,
        description=(
            "files larger than this are skipped unread; a build's memory grows with its "
            "chunks (one 200 MB Markdown file, lookup only: 5.4 GB)"
        ),
    )
    part_mb: float = Field(
        8.0, gt=0,
        description=(
            "text and Markdown files larger than this are parsed a part at a time (memory of "
            "one part); other files this large get the load time limit once per part_mb"
        ),
    )


class RetrievalConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    rrf_k: int = 60
    weight_bm25: float = 1.0
    weight_dense: float = 1.0
    candidates: int = Field(100, ge=1, description="hits taken from each retriever before fusion")
    compose: dict[str, Literal["flat-first", "structure"]] = Field(
        # measured on the SQLite questions (benchmarks/results/raptor.json, graphrag.json):
        # the tree's own order beats the flat ranking on drill-down questions; graph and
        # global search do not beat it on theirs, so the flat ranking leads there
        default_factory=lambda: {"tree": "structure", "graph": "flat-first", "global": "flat-first"},
        description="per route: lead with the flat ranking, or keep the structure's own order",
    )
    structure_header: int = Field(
        1, ge=0, description="tree/graph/global: structure contexts (summary, chain, report) put first"
    )
    structure_weight: float = Field(
        0.0, ge=0, description="RRF weight of the chunks a structure reached, vs 1.0 for lookup"
    )
    ranker: bool = Field(
        True, description="order every route's chunk candidates with the learned ranking stage"
    )
    ranker_model: str | None = Field(
        None, description="a ranker model JSON file (default: the one shipped with Arborgraph)"
    )
    ann_expansion: int = Field(
        1024, ge=16, description="approximate dense search (large indexes): HNSW candidates explored per question"
    )
    digest: bool = Field(
        True, description="routes the digest model has a plan for answer with the best sentences, not whole passages"
    )
    digest_model: str | None = Field(
        None, description="a digest model JSON file (default: the one shipped with Arborgraph)"
    )


class VectorIndexConfig(BaseModel):
    """The approximate nearest-neighbour index a build adds for large collections
    (usearch's HNSW over float16 vectors); below ``ann_min_rows`` chunks, dense search is
    exact and no such index is built."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ann_min_rows: int = Field(
        50_000, ge=1, description="chunks from which dense search is approximate (an HNSW index is built)"
    )
    # 16 links and 128 candidates kept recall@100 at 0.996 on 50,000 rows but 0.33 on
    # 200,000 (many near-duplicate chunks, as in a manual's versions); these hold 0.999
    # there (benchmarks/bench_ann_update.py) for 2.4x the build time
    connectivity: int = Field(32, ge=4, le=128, description="HNSW links per node")
    expansion_add: int = Field(256, ge=8, description="HNSW candidates kept while inserting")


class TreeSearchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    beam: int | None = Field(
        None, ge=1, description="nodes kept per level when descending the tree (None: raptor's default)"
    )
    focus_leaves: int = Field(
        3, ge=0, description="the documents of this many best tree leaves are the drill-down's focus (0: off)"
    )
    focus_lookup_weight: float = Field(
        0.5, ge=0, description="RRF weight of lookup hits inside the focus documents, vs 1.0 for the tree's leaves"
    )


class RouterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    min_confidence: float = Field(
        0.55, ge=0, le=1, description="below this, the two best routes are run and their candidates ranked together"
    )
    llm: bool = Field(False, description="route auto questions with the configured LLM (llm.model)")


class GraphBackendConfig(BaseModel):
    """Where the graph route looks up neighbours: in memory, or on the Bolt server
    (Neo4j) the index was exported to with ``arborgraph export-neo4j``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str = Field("memory", description="'memory', or the server's bolt:// or neo4j:// URI")
    user: str = "neo4j"
    password_env: str | None = Field(
        "NEO4J_PASSWORD", description="environment variable read for the password when connecting (unset: none)"
    )
    database: str | None = Field(None, description="database (default: the server's default)")
    timeout_s: float = Field(15.0, gt=0, description="seconds to wait for a connection")


class GraphExtractConfig(BaseModel):
    """The graph's entity and relation extractors: rule-based in a build without an LLM,
    LLM-based with one (``graph_extract.rules.min_term_df = 2``, ...)."""

    model_config = ConfigDict(extra="forbid")

    rules: RuleExtractorConfig = Field(default_factory=RuleExtractorConfig)
    llm: LLMExtractorConfig = Field(default_factory=LLMExtractorConfig)


class Config(BaseModel):
    """Everything a build and a query need; stored in the index manifest."""

    model_config = ConfigDict(extra="forbid")

    ingest: IngestConfig = Field(default_factory=IngestConfig)
    chunking: ChunkingConfig = Field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    tree: RaptorConfig = Field(default_factory=RaptorConfig)
    tree_search: TreeSearchConfig = Field(default_factory=TreeSearchConfig)
    graph_search: GraphSearchConfig = Field(default_factory=GraphSearchConfig)
    global_search: GlobalSearchConfig = Field(default_factory=GlobalSearchConfig)
    graph: GraphConfig = Field(default_factory=GraphConfig)
    graph_extract: GraphExtractConfig = Field(default_factory=GraphExtractConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    graph_backend: GraphBackendConfig = Field(default_factory=GraphBackendConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    vectors: VectorIndexConfig = Field(default_factory=VectorIndexConfig)
    build_tree: bool = True
    build_graph: bool = True
    allow_empty: bool = Field(False, description="build an index even when the documents hold no text to index (0 chunks)")
    tree_drift_threshold: float = Field(
        0.25, ge=0, le=1, description="share of changed leaves above which an update re-clusters the tree"
    )
    graph_drift_threshold: float = Field(
        0.25, ge=0, le=1,
        description="share of changed chunks above which an update refits the extractor and re-extracts the graph",
    )
    contextual_prefixes: bool = Field(
        False, description="with an LLM: a sentence situating each chunk, indexed in front of it"
    )
    executor: str = Field(
        "auto",
        description="serial | process | auto (a process pool for large inputs) | dask | tcp://host:port",
    )

    def to_manifest(self) -> dict[str, Any]:
        """The config as stored in the manifest (secrets and the shared embedding cache's
        settings left out)."""
        data = self.model_dump(mode="json")
        data.get("llm", {}).pop("api_key", None)
        # where vectors may be looked up is this machine's business, not the index's
        for name in SHARED_CACHE_SETTINGS:
            data.get("embedding", {}).pop(name, None)
        return data


# The layering is written here, not with pydantic-settings (weighed for #37; 2.16.3 read):
# its EnvSettingsSource reads os.environ itself (_load_env_vars, no parameter for a
# mapping), so load_config(environ=...) and check_environment(environ) would have to
# override a private method; a BaseSettings Config would read os.environ wherever the
# library builds Config(); an ARBORGRAPH_ name that is no field at the top
# (ARBORGRAPH_BUILD_TREES) is ignored even with extra="forbid", where we say it is a typo;
# and its file sources skip a missing file silently (_existing_files) and raise the
# parsers' own errors without the file's name.
def _deep_merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if path.suffix not in (".toml", ".yaml", ".yml", ".json"):
        raise ConfigError(f"config file {path}: use .toml, .yaml or .json")
    if path.suffix in (".yaml", ".yml"):
        import yaml  # only for a YAML file: every command that opens an index reads this module

        errors: tuple[type[Exception], ...] = (yaml.YAMLError,)
    else:
        errors = (tomllib.TOMLDecodeError, json.JSONDecodeError)
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(raw)
        elif path.suffix == ".json":
            data = json.loads(raw)
        else:
            data = yaml.safe_load(raw) or {}
    except errors as exc:
        raise ConfigError(f"config file {path} is not valid: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a table/mapping at the top")
    return data


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        path = name[len(ENV_PREFIX) :].lower().split("__")
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        try:
            node[path[-1]] = json.loads(value)
        except json.JSONDecodeError:
            node[path[-1]] = value
    return data


# set by ``arborgraph serve --workers`` for its worker processes: not a config variable
INTERNAL_ENV = frozenset({"ARBORGRAPH_SERVE_SETTINGS"})


def check_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``ARBORGRAPH_*`` variables as config values; ConfigError naming the first one
    that is no setting (a typo) or holds an invalid value. Every command checks them,
    whether or not it reads them."""
    environ = os.environ if environ is None else environ
    given = {k: v for k, v in environ.items() if k.startswith(ENV_PREFIX) and k not in INTERNAL_ENV}
    data = _from_env(given)
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ENV_PREFIX + "__".join(str(p).upper() for p in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ConfigError(f"{name} is not an Arborgraph setting (a typo?); see docs/configuration.md") from None
        raise ConfigError(f"{name}: {err['msg']}") from None
    return data


def load_config(
    file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Build the root config from defaults, a file, the environment and overrides."""
    data: dict[str, Any] = {}
    if file is not None:
        data = _read_file(Path(file))
    data = _deep_merge(data, _from_env(os.environ if environ is None else environ))
    if overrides:
        data = _deep_merge(data, overrides)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None
