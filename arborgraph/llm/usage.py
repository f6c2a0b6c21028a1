"""Accounting of model calls, cache hits and tokens, in total and per pipeline stage."""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr


class StageUsage(BaseModel):
    """Counters for one stage (or for the whole run).

    ``calls`` counts requests the endpoint answered successfully (a repair is a call too);
    ``retries`` counts failed attempts that were tried again; ``failures`` counts items
    given up on (an ``LLMError`` was raised); ``fallbacks`` counts build items (a tree
    summary, a chunk's extraction, a community report) given their no-LLM result because
    no reply for them was usable; ``cache_hits`` counts items served from the cache (for
    embeddings: texts); ``seconds`` is the time spent in calls, summed over threads.
    """

    calls: int = 0
    cache_hits: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0
    repairs: int = 0
    failures: int = 0
    fallbacks: int = 0
    seconds: float = 0.0


_COUNTERS = tuple(StageUsage.model_fields)


class LLMUsage(BaseModel):
    """Thread-safe usage totals with a per-stage breakdown; share one per build."""

    total: StageUsage = Field(default_factory=StageUsage)
    by_stage: dict[str, StageUsage] = Field(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _add(self, stage: str, **amounts: float) -> None:
        with self._lock:
            stage_usage = self.by_stage.setdefault(stage, StageUsage())
            for name, amount in amounts.items():
                setattr(self.total, name, getattr(self.total, name) + amount)
                setattr(stage_usage, name, getattr(stage_usage, name) + amount)

    def record_call(self, stage: str, tokens_in: int, tokens_out: int, *, seconds: float = 0.0) -> None:
        self._add(stage, calls=1, tokens_in=tokens_in, tokens_out=tokens_out, seconds=seconds)

    def record_cache_hit(self, stage: str, count: int = 1) -> None:
        self._add(stage, cache_hits=count)

    def record_retry(self, stage: str) -> None:
        self._add(stage, retries=1)

    def record_repair(self, stage: str) -> None:
        self._add(stage, repairs=1)

    def record_failure(self, stage: str) -> None:
        self._add(stage, failures=1)

    def record_fallback(self, stage: str) -> None:
        self._add(stage, fallbacks=1)

    @property
    def calls(self) -> int:
        return self.total.calls

    @property
    def cache_hits(self) -> int:
        return self.total.cache_hits

    def to_dict(self) -> dict[str, Any]:
        """Flat report for build manifests: ``llm_calls``, ``llm_cache_hits``, ...,
        and ``llm_by_stage`` mapping each stage to its own (unprefixed) counters."""
        with self._lock:
            report: dict[str, Any] = {
                f"llm_{name}": _rounded(getattr(self.total, name)) for name in _COUNTERS
            }
            report["llm_by_stage"] = {
                stage: {k: _rounded(v) for k, v in usage.model_dump().items()}
                for stage, usage in sorted(self.by_stage.items())
            }
        return report


def _rounded(value: float) -> float:
    # seconds to the millisecond; the counters are ints and stay so
    return round(value, 3) if isinstance(value, float) else value
