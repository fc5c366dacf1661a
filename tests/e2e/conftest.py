"""End-to-end tests: the SDK against the emulator over real loopback HTTP."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e
