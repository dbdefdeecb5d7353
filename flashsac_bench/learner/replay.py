"""Replay ring on the learner's device: one packed fp32 tensor [capacity, width].

Row = obs | critic_obs | next_obs | next_critic_obs | action | reward | terminated | truncated.
next_* hold the TRUE final observation for transitions that ended an episode. Rewards are raw
(the learner scales them at sample time). The cycle samples indices with the device RNG and
gathers rows straight into its static batch, so nothing here syncs with the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

# The one-number columns of a row (the others are vectors of the env's sizes).
SCALAR_COLUMNS = ("rewards", "terminated", "truncated")


@dataclass(frozen=True)
class RowLayout:
    obs_dim: int
    critic_obs_dim: int
    action_dim: int

    @cached_property
    def spans(self) -> dict[str, tuple[int, int]]:
        """Column range of every field (computed once; split() runs in every update)."""
        widths = {
            "obs": self.obs_dim,
            "critic_obs": self.critic_obs_dim,
            "next_obs": self.obs_dim,
            "next_critic_obs": self.critic_obs_dim,
            "actions": self.action_dim,
            "rewards": 1,
            "terminated": 1,
            "truncated": 1,
        }
        spans, start = {}, 0
        for name, w in widths.items():
            spans[name] = (start, start + w)
            start += w
        return spans

    @property
    def width(self) -> int:
        return max(end for _, end in self.spans.values())

    def span(self, name: str) -> tuple[int, int]:
        return self.spans[name]

    def split(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """Column views of rows [..., width]; the scalar columns (SCALAR_COLUMNS) come back as
        [...], the vector ones as [..., dim] whatever their dim (a 1-d action too)."""
        out = {}
        for name, (a, b) in self.spans.items():
            col = rows[..., a:b]
            out[name] = col.squeeze(-1) if name in SCALAR_COLUMNS else col
        return out


class ReplayRing:
    def __init__(self, capacity: int, layout: RowLayout, device: torch.device | str) -> None:
        self.capacity = capacity
        self.layout = layout
        self.storage = torch.zeros(capacity, layout.width, dtype=torch.float32, device=device)
        # The write position and fill level live on the device (`write_rows` is graph-safe);
        # `cursor` / `count` mirror them on the host for the runner's bookkeeping.
        self.cursor = 0
        self.count = 0
        self.cursor_t = torch.zeros((), dtype=torch.int64, device=device)
        self.size = torch.zeros((), dtype=torch.int64, device=device)
        # arange(n) per insert size, kept alive: a captured graph reads its address.
        self._offsets: dict[int, torch.Tensor] = {}

    def insert(self, **columns: torch.Tensor) -> None:
        """Append one slab of transitions given column by column (see RowLayout)."""
        missing = sorted(set(self.layout.spans) - set(columns))
        if missing:
            raise KeyError(f"replay insert is missing columns {missing}")
        n = next(iter(columns.values())).shape[0]
        slab = torch.empty(n, self.layout.width, dtype=torch.float32, device=self.storage.device)
        for name, value in columns.items():
            a, b = self.layout.span(name)
            slab[:, a:b] = value.reshape(n, b - a)
        self.insert_rows(slab)

    def insert_rows(self, slab: torch.Tensor) -> None:
        """Append packed rows [n, width] (any device); wraps around the ring."""
        self.write_rows(slab.to(self.storage.device, non_blocking=True))
        self.advance(slab.shape[0])

    def write_rows(self, slab: torch.Tensor) -> None:
        """Device half of an insert: rows [n, width] (on the ring's device) go to the n slots
        after the device cursor, which then moves on. No host state is read or written, so the
        same call can be captured in a CUDA graph; `advance(n)` keeps the host mirror."""
        n = slab.shape[0]
        if n > self.capacity:
            raise ValueError(f"cannot insert {n} rows into a ring of capacity {self.capacity}")
        self.storage.index_copy_(0, self.next_slots(n), slab)
        self.cursor_t.copy_(torch.remainder(self.cursor_t + n, self.capacity))
        self.size.copy_(torch.clamp(self.size + n, max=self.capacity))

    def next_slots(self, n: int) -> torch.Tensor:
        """Device indices of the n slots the next write of n rows fills."""
        offsets = self._offsets.get(n)
        if offsets is None:
            offsets = torch.arange(n, dtype=torch.int64, device=self.storage.device)
            self._offsets[n] = offsets
        return torch.remainder(self.cursor_t + offsets, self.capacity)

    def advance(self, n: int) -> None:
        """Host mirror of `write_rows(n rows)`."""
        self.cursor = (self.cursor + n) % self.capacity
        self.count = min(self.count + n, self.capacity)

    def state_dict(
        self, copy: Callable[[torch.Tensor], torch.Tensor] | None = None
    ) -> dict[str, object]:
        """The stored rows as a host tensor (`copy`: how to copy them; default a new tensor)."""
        return {
            "storage": (copy or host_copy)(self.storage[: self.count]),
            "cursor": self.cursor,
            "count": self.count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        storage = state["storage"]
        assert isinstance(storage, torch.Tensor)
        self.count = int(state["count"])
        self.cursor = int(state["cursor"])
        self.storage[: self.count].copy_(storage)
        self.size.fill_(self.count)
        self.cursor_t.fill_(self.cursor)


def host_copy(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor that owns its data: one copy (a device tensor's .cpu() already is one; the
    ring's is ~0.6 GB in a walk-sized checkpoint)."""
    t = t.detach()
    return t.clone() if t.device.type == "cpu" else t.cpu()
