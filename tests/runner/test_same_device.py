"""The device env and the learner must share a device; "cuda" names the current CUDA device."""

from __future__ import annotations

import pytest
import torch

from flashsac_bench.runner.setup import same_device


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [("cpu", "cpu", True), ("cpu", "cuda:0", False), ("cuda:0", "cuda:1", False),
     ("cuda:1", "cuda:1", True)],
)  # fmt: skip
def test_devices_with_explicit_indices(a, b, same):
    assert same_device(torch.device(a), torch.device(b)) is same


def test_plain_cuda_is_the_current_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert same_device(torch.device("cuda"), torch.device("cuda:1"))
    assert not same_device(torch.device("cuda:0"), torch.device("cuda"))
