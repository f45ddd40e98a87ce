"""Shared test fixtures: where the real recorded outputs live, and the repo root."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# CI clones the repository with shared/ beside it (../shared/fixtures).
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"real recorded fixtures not found at {FIXTURES} (expected ../shared/fixtures)")
    return FIXTURES


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
