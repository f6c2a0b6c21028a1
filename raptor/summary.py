"""The summariser interface: what a summariser is given and what it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class ClusterMember:
    """One child of the summary to be written: a leaf chunk or a lower summary.

    ``level`` is 0 for a leaf chunk; ``position`` is the member's place in the
    manual's reading order (for a summary, that of its first leaf).
    """

    node_id: str
    text: str
    heading_path: tuple[str, ...] = ()
    title: str = ""
    level: int = 0
    position: int = 0


@dataclass(frozen=True)
class Cluster:
    """A group of nodes to summarise. ``vectors[i]`` is the unit vector of ``members[i]``."""

    node_id: str  # the id the summary node will get, e.g. "L2:4"
    level: int  # the summary's level (members are one level below)
    members: tuple[ClusterMember, ...]
    vectors: np.ndarray


class Summary(BaseModel):
    """A summary with its title. Both must be non-empty."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Summariser(Protocol):
    """Writes one summary per cluster; ``name`` is recorded on every node it writes."""

    name: str

    def summarise(self, cluster: Cluster) -> Summary: ...
