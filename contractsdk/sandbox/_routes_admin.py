"""``POST /oauth/token`` and the ``/__sandbox/`` admin API.

The admin API is the emulator's own (the service has nothing like it); it takes
``Authorization: Bearer <admin token>`` (checked in ``_app.py``) and calls the same
:class:`Emulator` methods that ``SandboxServer`` exposes in Python.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from ._auth import TokenError
from ._emulator import UNCHANGED, Emulator, Role, Unchanged
from ._faults import FaultRule
from ._routes import Handler, RouteGroup
from ._wire import (
    ApiError,
    decode_json,
    is_int,
    is_number,
    json_response,
    parse_id,
    read_body,
    read_json,
    read_object,
    require_int,
)


class AdminRoutes(RouteGroup):
    """Handlers of the token endpoint and the admin API.

    Args:
        emulator: The emulator they control.
    """

    def routes(self) -> list[tuple[str, str, Handler]]:
        """Every route of the group, as (method, path, handler)."""
        return [
            ("POST", "/oauth/token", self.token),
            ("GET", "/__sandbox/info", self.info),
            ("POST", "/__sandbox/reset", self.reset),
            ("POST", "/__sandbox/teams/{teamId}/members", self.add_member),
            ("DELETE", "/__sandbox/teams/{teamId}/members/{userId}", self.remove_member),
            ("GET", "/__sandbox/counters", self.counters),
            ("GET", "/__sandbox/faults", self.get_faults),
            ("PUT", "/__sandbox/faults", self.put_faults),
            ("GET", "/__sandbox/limits", self.get_limits),
            ("PUT", "/__sandbox/limits", self.put_limits),
        ]

    # --- OAuth -----------------------------------------------------------------------------

    async def token(self, request: web.Request) -> web.Response:
        """``POST /oauth/token``: the client-credentials grant, JSON or form body (§2)."""
        ctype = request.content_type
        raw = await read_body(request)
        params: dict[str, Any]
        try:
            if ctype == "application/x-www-form-urlencoded":
                # parse_qsl decodes %-escapes with errors="replace": no lone surrogates.
                params = dict(parse_qsl(raw.decode(), keep_blank_values=True))
            elif raw.strip():
                decoded = decode_json(raw)
                if not isinstance(decoded, dict):
                    raise ValueError("not an object")
                params = decoded
            else:
                params = {}
        except (ValueError, RecursionError):
            return _oauth_error(TokenError(400, "invalid_request", "Malformed request body"))
        try:
            grant = self._emulator.auth.issue(params, request.headers.get("Authorization"))
        except TokenError as exc:
            return _oauth_error(exc)
        # RFC 6749 §5.1: token responses must not be cached.
        return json_response(grant, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    # --- admin -----------------------------------------------------------------------------

    async def info(self, request: web.Request) -> web.Response:
        """``GET /__sandbox/info``: the seed data summary, limits and fault rules."""
        emulator = self._emulator
        out = emulator.seed.summary()
        out["limits"] = _limits_json(emulator)
        out["faults"] = [r.to_json() for r in emulator.faults.rules]
        return json_response(out)

    async def reset(self, request: web.Request) -> web.Response:
        """``POST /__sandbox/reset``: back to the seed data."""
        self._emulator.reset()
        return json_response({"reset": True, "seed": self._emulator.seed.seed})

    async def add_member(self, request: web.Request) -> web.Response:
        """``POST /__sandbox/teams/{teamId}/members`` ``{user_id, role}``: add or change a role."""
        team_id = parse_id(request.match_info["teamId"], "teamId")
        body = await read_object(request)
        user_id = require_int(body, "user_id")
        role = body.get("role", "member")
        if role not in ("member", "owner"):
            raise ApiError(400, f'role must be "member" or "owner", got {json.dumps(role)[:40]}')
        return self._set_member(team_id, user_id, role)

    async def remove_member(self, request: web.Request) -> web.Response:
        """``DELETE /__sandbox/teams/{teamId}/members/{userId}``: remove a user from a team."""
        team_id = parse_id(request.match_info["teamId"], "teamId")
        user_id = parse_id(request.match_info["userId"], "userId")
        return self._set_member(team_id, user_id, None)

    def _set_member(self, team_id: int, user_id: int, role: Role | None) -> web.Response:
        try:
            team = self._emulator.set_member(team_id, user_id, role)
        except LookupError as exc:
            raise ApiError(404, str(exc).strip("'\"")) from None
        except ValueError as exc:
            raise ApiError(409, str(exc)) from None
        return json_response(
            {"team_id": team.id, "owner_ids": team.owner_ids, "member_ids": team.member_ids}
        )

    async def counters(self, request: web.Request) -> web.Response:
        """``GET /__sandbox/counters``: request counters (see ``_counters.py``)."""
        return json_response(self._emulator.counters_json())

    async def get_faults(self, request: web.Request) -> web.Response:
        """``GET /__sandbox/faults``: the current fault rules."""
        return json_response({"rules": [r.to_json() for r in self._emulator.faults.rules]})

    async def put_faults(self, request: web.Request) -> web.Response:
        """``PUT /__sandbox/faults`` ``{"rules": [...], "seed"?: int}`` or a bare list."""
        body = await read_json(request)
        seed = None
        if isinstance(body, dict):
            unknown = set(body) - {"rules", "seed"}
            if unknown:
                raise ApiError(400, f"unknown keys: {', '.join(sorted(unknown))}")
            seed = body.get("seed")
            if seed is not None and not is_int(seed):
                raise ApiError(400, "seed must be an integer")
            body = body.get("rules", [])
        if not isinstance(body, list) or not all(isinstance(r, dict) for r in body):
            raise ApiError(400, "rules must be an array of objects")
        try:
            rules = [FaultRule.from_json(r) for r in body]
        except (ValueError, TypeError) as exc:
            raise ApiError(400, f"invalid fault rule: {exc}") from None
        self._emulator.set_faults(rules, seed)
        return json_response({"rules": [r.to_json() for r in rules]})

    async def get_limits(self, request: web.Request) -> web.Response:
        """``GET /__sandbox/limits``: the current rate limits."""
        return json_response(_limits_json(self._emulator))

    async def put_limits(self, request: web.Request) -> web.Response:
        """``PUT /__sandbox/limits`` ``{read_rate, write_rate, burst, rate_headers}`` (partial)."""
        body = await read_object(request)
        unknown = set(body) - {"read_rate", "write_rate", "burst", "rate_headers"}
        if unknown:
            raise ApiError(400, f"unknown keys: {', '.join(sorted(unknown))}")
        numbers: dict[str, float | Unchanged | None] = {}
        for key in ("read_rate", "write_rate", "burst"):
            value = body.get(key, UNCHANGED)
            if not (value is None or value is UNCHANGED or is_number(value)):
                raise ApiError(400, f"{key} must be a number or null")
            numbers[key] = value
        headers = body.get("rate_headers", UNCHANGED)
        if not isinstance(headers, (bool, Unchanged)):
            raise ApiError(400, "rate_headers must be a boolean")
        try:
            self._emulator.set_limits(
                read_rate=numbers["read_rate"],
                write_rate=numbers["write_rate"],
                burst=numbers["burst"],
                rate_headers=headers,
            )
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        return json_response(_limits_json(self._emulator))


def _limits_json(emulator: Emulator) -> dict[str, Any]:
    limits = emulator.limiter.limits
    return {
        "read_rate": limits.read_rate,
        "write_rate": limits.write_rate,
        "burst": limits.burst,
        "rate_headers": limits.rate_headers,
    }


def _oauth_error(exc: TokenError) -> web.Response:
    return json_response(exc.body(), status=exc.status, headers={"Cache-Control": "no-store"})
