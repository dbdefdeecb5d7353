"""The device replay ring: wrap-around writes from a device cursor, host mirror, checkpoints."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.learner.replay import ReplayRing, RowLayout

LAYOUT = RowLayout(obs_dim=2, critic_obs_dim=3, action_dim=1)


def _slab(start: int, n: int) -> torch.Tensor:
    """Rows whose every column holds the row's global insertion number."""
    return torch.arange(start, start + n, dtype=torch.float32)[:, None].expand(n, LAYOUT.width)


def test_rows_wrap_around_like_a_ring_and_the_mirrors_agree():
    ring = ReplayRing(10, LAYOUT, "cpu")
    expected = torch.full((10,), -1.0)
    ring.storage.fill_(-1.0)
    inserted = 0
    for n in (4, 4, 4, 3, 10, 1):
        ring.insert_rows(_slab(inserted, n))
        for i in range(inserted, inserted + n):
            expected[i % 10] = i  # hand-computed ring slot of insertion number i
        inserted += n
        assert torch.equal(ring.storage[:, 0], expected)
        assert ring.cursor == inserted % 10 and int(ring.cursor_t) == ring.cursor
        assert ring.count == min(inserted, 10) and int(ring.size) == ring.count
    assert torch.equal(ring.storage, expected[:, None].expand(10, LAYOUT.width))


def test_write_rows_reads_no_host_state():
    """The device half alone moves the device cursor; the host mirror moves only in advance()."""
    ring = ReplayRing(6, LAYOUT, "cpu")
    ring.write_rows(_slab(0, 4))
    ring.write_rows(_slab(4, 4))
    assert (ring.cursor, ring.count) == (0, 0)  # host mirror untouched
    assert int(ring.cursor_t) == 2 and int(ring.size) == 6
    assert ring.storage[:, 0].tolist() == [6.0, 7.0, 2.0, 3.0, 4.0, 5.0]
    ring.advance(4)
    ring.advance(4)
    assert (ring.cursor, ring.count) == (2, 6)


def test_state_dict_round_trip_restores_the_device_cursor():
    a = ReplayRing(8, LAYOUT, "cpu")
    a.insert_rows(_slab(0, 5))
    a.insert_rows(_slab(5, 5))
    b = ReplayRing(8, LAYOUT, "cpu")
    b.load_state_dict(a.state_dict())
    a.insert_rows(_slab(10, 3))
    b.insert_rows(_slab(10, 3))
    assert torch.equal(a.storage, b.storage)
    assert (b.cursor, b.count, int(b.cursor_t), int(b.size)) == (5, 8, 5, 8)


def test_too_many_rows_are_refused():
    ring = ReplayRing(4, LAYOUT, "cpu")
    with pytest.raises(ValueError, match="capacity 4"):
        ring.insert_rows(_slab(0, 5))
