"""Guard: the tests run on the event loop CI asked for (``CONTRACTSDK_TEST_LOOP``)."""

from __future__ import annotations

import asyncio
import os

from tests.conftest import LOOP_VARIABLE


async def test_the_tests_run_on_the_requested_event_loop() -> None:
    """The loop is uvloop's when asked for (so a typo cannot run that job on CPython's)."""
    module = type(asyncio.get_running_loop()).__module__
    if os.environ.get(LOOP_VARIABLE) == "uvloop":
        assert module.startswith("uvloop"), module
    else:
        assert module.startswith("asyncio"), module
