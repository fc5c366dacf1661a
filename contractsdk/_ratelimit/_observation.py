"""What the limiter tells the learning policy about one answer (see ``_control.py``)."""

from __future__ import annotations

import math

import attrs

from contractsdk._headers import RateLimitHints

__all__ = ["Observation"]


@attrs.frozen
class Observation:
    """What one answer said, with what the limiter measured when it came.

    Attributes:
        status: The HTTP status.
        hints: The rate-limit headers, parsed.
        fresh: Its request was granted at the current epoch (not an echo).
        sent: Requests granted per busy second over the last busy second (0: unknown).
        answered: Answers to requests granted in the current epoch, this one included.
        admitted: How many of those were not 429.
        admitted_rate: Answers that were not 429, per busy second, lately (over the last
            0.5 to 1 busy second).
        admitted_second: The same over exactly the last busy second.
        scale: How many processes share the bucket, for ``admitted`` to stand for all of
            them (1 alone).
        epoch_age: Busy seconds since the current epoch began.
        hint: The rate the server's headers suggest (``Limit`` over its window), if any.
        phase_slow: Set by the controller itself (the observation arrived in slow start).
        backlogged: Requests were waiting for the bucket when it came.
        streak: 429s in a row, this one included (each for a request granted after the
            one before was answered); 0 for a success.
        refused_for: Seconds since the first of those 429s was answered (0.0: none).
        paused: The share of the last busy second the bucket stood paused after 429s
            (the schedule sent nothing then, however fast its rate).
    """

    status: int
    hints: RateLimitHints = attrs.field(factory=RateLimitHints)
    fresh: bool = True
    sent: float = 0.0
    answered: int = 0
    admitted: int = 0
    admitted_rate: float = 0.0
    admitted_second: float = 0.0
    scale: float = 1.0
    epoch_age: float = math.inf
    hint: float | None = None
    phase_slow: bool = False
    backlogged: bool = False
    streak: int = 1
    refused_for: float = 0.0
    paused: float = 0.0

    @property
    def throttled(self) -> bool:
        """The answer is a 429."""
        return self.status == 429

    @property
    def exhausted(self) -> bool:
        """The server says its counter is empty."""
        return self.hints.exhausted
