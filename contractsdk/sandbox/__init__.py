"""A local emulator of the Contract Service API (Legislate), built on aiohttp.web.

It serves the service's endpoints with their real JSON shapes, bearer and OAuth
client-credentials auth, team permissions, term validation, per-credential read/write
rate limits, Idempotency-Key replay and seeded fault injection. It shares no code with
the SDK: it is the service's stand-in, and a bug in one must not hide in the other.

Start it in-process with :class:`SandboxServer`, embed it with :func:`create_app`, or run
``python -m contractsdk.sandbox`` (:func:`run_main`). See ``docs/sandbox.md``.
"""

from ._app import EMULATOR_KEY, create_app
from ._cli import main as run_main
from ._config import SandboxConfig
from ._emulator import Emulator
from ._faults import FaultRule
from ._ratelimit import RateLimits
from ._seed import Seed, SeedTeam, SeedUser
from ._server import SandboxServer
from ._store import SandboxState

__all__ = [
    # running it
    "SandboxServer",
    "SandboxConfig",
    "create_app",
    "run_main",
    # controlling it
    "FaultRule",
    "RateLimits",
    "Emulator",
    "EMULATOR_KEY",
    # inspecting it
    "SandboxState",
    "Seed",
    "SeedUser",
    "SeedTeam",
]
