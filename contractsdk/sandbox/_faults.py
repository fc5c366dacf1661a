"""Fault injection: errors, latency, resets and lost responses, drawn from a seeded RNG.

The real service documents none of this; the faults exist so that tests and benchmarks
can show that a client survives 5xx answers, slow answers, connections dropped before a
request is processed (``reset``) and connections dropped after it was processed and
committed (``lost``, the ambiguous case that only an Idempotency-Key makes safe to retry).

Invariants:
- Rules are tried in order; the first whose route matches decides (later rules are not
  consulted), so a specific rule placed before ``*`` overrides it.
- Each matched request draws exactly one number for the outcome and, when the latency is
  a range, one more for the delay, from one ``random.Random(seed)``: for a given order of
  requests the faults are reproducible.
- Per rule, ``status_500 + status_502 + status_503 + status_504 + reset + lost <= 1``.
"""

from __future__ import annotations

import enum
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._wire import is_number

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "*"})
_OUTCOMES = ("status_500", "status_502", "status_503", "status_504", "reset", "lost")


class Outcome(enum.Enum):
    """What a fault rule decided for one request."""

    NONE = "none"
    STATUS_500 = "status_500"
    STATUS_502 = "status_502"
    STATUS_503 = "status_503"
    STATUS_504 = "status_504"
    RESET = "reset"
    LOST = "lost"

    @property
    def status(self) -> int | None:
        """The HTTP status this outcome answers with, if it is an error status."""
        return int(self.value[-3:]) if self.value.startswith("status_") else None


def _probability(instance: FaultRule, attribute: attrs.Attribute[float], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be a probability in [0, 1], got {value!r}")


def _to_latency(value: float | tuple[float, float] | list[float] | None) -> tuple[float, float]:
    if value is None:
        return (0.0, 0.0)
    if isinstance(value, (int, float)):
        return (float(value), float(value))
    low, high = value
    return (float(low), float(high))


def _compile_route(route: str) -> tuple[str, re.Pattern[str]]:
    parts = route.split()
    if len(parts) == 1:
        method, pattern = "*", parts[0]
    elif len(parts) == 2:
        method, pattern = parts[0].upper(), parts[1]
    else:
        raise ValueError(f"route must be 'METHOD /path/glob', '/path/glob' or '*': {route!r}")
    if method not in _METHODS:
        raise ValueError(f"unknown method {method!r} in route {route!r}")
    if pattern == "*":
        # A bare "*" means every API path; the token endpoint is faulted only when a
        # rule names it, so that "*" does not also break authentication.
        return method, re.compile(r"/v1(/.*)?")
    if not pattern.startswith("/"):
        raise ValueError(f"the path of route {route!r} must start with '/' (or be '*')")
    regex = "".join(
        "[^/]+" if part == "*" else ".*" if part == "**" else re.escape(part)
        for part in re.split(r"(\*\*|\*)", pattern)
        if part
    )
    return method, re.compile(regex)


@attrs.frozen
class FaultRule:
    """A fault specification for the requests matching one route pattern.

    Args:
        route: ``"METHOD /path/glob"`` (e.g. ``"POST /v1/teams/*/contracts"``), a bare
            path glob (any method), or ``"*"`` (every ``/v1`` request). In the glob
            ``*`` matches one path segment and ``**`` any run of characters. The method
            may be ``*``.
        status_500: Probability of answering 500 without processing the request.
        status_502: Probability of answering 502 without processing.
        status_503: Probability of answering 503 without processing.
        status_504: Probability of answering 504 without processing.
        reset: Probability of closing the connection before processing.
        lost: Probability of processing and committing the request, then closing the
            connection without answering.
        latency: Added delay in seconds before processing: a number, a ``(low, high)``
            range drawn uniformly, or None.

    Raises:
        ValueError: for a malformed route, a probability outside [0, 1], probabilities
            summing above 1, or a negative or inverted latency.
    """

    route: str = "*"
    status_500: float = attrs.field(default=0.0, validator=_probability)
    status_502: float = attrs.field(default=0.0, validator=_probability)
    status_503: float = attrs.field(default=0.0, validator=_probability)
    status_504: float = attrs.field(default=0.0, validator=_probability)
    reset: float = attrs.field(default=0.0, validator=_probability)
    lost: float = attrs.field(default=0.0, validator=_probability)
    latency: tuple[float, float] = attrs.field(default=(0.0, 0.0), converter=_to_latency)
    _method: str = attrs.field(init=False, repr=False, eq=False)
    _pattern: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        method, pattern = _compile_route(self.route)
        object.__setattr__(self, "_method", method)
        object.__setattr__(self, "_pattern", pattern)
        if sum(getattr(self, name) for name in _OUTCOMES) > 1.0 + 1e-9:
            raise ValueError(f"the fault probabilities of {self.route!r} sum to more than 1")
        low, high = self.latency
        if low < 0 or high < low:
            raise ValueError(f"latency must be a non-negative (low, high) range: {self.latency}")

    def matches(self, method: str, path: str) -> bool:
        """Tell whether the rule applies to a request.

        Args:
            method: The request method.
            path: The request path.

        Returns:
            True when method and path match.
        """
        return (self._method in ("*", method)) and self._pattern.fullmatch(path) is not None

    def to_json(self) -> dict[str, Any]:
        """Describe the rule as JSON (the ``PUT /__sandbox/faults`` shape).

        Returns:
            The rule's public fields.
        """
        out: dict[str, Any] = {"route": self.route}
        out.update({name: getattr(self, name) for name in _OUTCOMES})
        out["latency"] = list(self.latency)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultRule:
        """Build a rule from its JSON description.

        Args:
            data: ``{"route": ..., "status_500": 0.1, "latency": [0, 0.01], ...}``.

        Returns:
            The rule.

        Raises:
            ValueError: for unknown keys or invalid values.
        """
        known = {"route", "latency", *_OUTCOMES}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault rule keys: {', '.join(sorted(unknown))}")
        kwargs: dict[str, Any] = {}
        for name in _OUTCOMES:
            if name in data:
                value = data[name]
                if not is_number(value):
                    raise ValueError(f"{name} must be a number")
                kwargs[name] = float(value)
        route = data.get("route", "*")
        if not isinstance(route, str):
            raise ValueError("route must be a string")
        latency = data.get("latency")
        if latency is not None and not (
            is_number(latency)
            or (isinstance(latency, list) and len(latency) == 2 and all(map(is_number, latency)))
        ):
            raise ValueError("latency must be a number or a [low, high] pair")
        return cls(route, latency=latency, **kwargs)


@attrs.frozen
class Fault:
    """The fault decided for one request.

    Args:
        outcome: What to do.
        delay: Seconds to wait before processing.
    """

    outcome: Outcome
    delay: float


NO_FAULT = Fault(Outcome.NONE, 0.0)


class FaultInjector:
    """Decides, per request, which fault (if any) to inject.

    Args:
        rules: The initial rules.
        seed: Seed of the RNG.
    """

    def __init__(self, rules: Iterable[FaultRule], seed: int) -> None:
        self._rules = tuple(rules)
        self._rng = random.Random(seed)
        self._seed = seed

    @property
    def rules(self) -> tuple[FaultRule, ...]:
        """The current rules, in matching order."""
        return self._rules

    def set_rules(self, rules: Iterable[FaultRule], seed: int | None = None) -> None:
        """Replace the rules at run time.

        Args:
            rules: The new rules (empty to switch faults off).
            seed: A new RNG seed; None keeps the current RNG stream.
        """
        self._rules = tuple(rules)
        if seed is not None:
            self._rng = random.Random(seed)
            self._seed = seed

    def reset(self) -> None:
        """Restart the RNG from the current seed (rules are kept)."""
        self._rng = random.Random(self._seed)

    def decide(self, method: str, path: str) -> Fault:
        """Pick the fault for a request.

        Args:
            method: The request method.
            path: The request path.

        Returns:
            The fault; :data:`NO_FAULT` when no rule matches or none fires.
        """
        if not self._rules:
            return NO_FAULT
        rule = next((r for r in self._rules if r.matches(method, path)), None)
        if rule is None:
            return NO_FAULT
        draw = self._rng.random()
        outcome = Outcome.NONE
        for name in _OUTCOMES:
            probability: float = getattr(rule, name)
            if draw < probability:
                outcome = Outcome(name)
                break
            draw -= probability
        low, high = rule.latency
        delay = low if high == low else self._rng.uniform(low, high)
        if outcome is Outcome.NONE and delay == 0.0:
            return NO_FAULT
        return Fault(outcome, delay)
