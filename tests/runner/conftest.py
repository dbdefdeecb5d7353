"""Fixtures of the runner tests (helpers live in runner_helpers, importable by name)."""

from __future__ import annotations

import pytest


@pytest.fixture
def fake_factory():
    import runner_fakes

    return runner_fakes.make_env
