"""The request generator of ``test_fuzz.py``: random hostile requests built from real routes.

:class:`_Fuzzer` knows the emulator's routes and its live ids. For a route it fills the
path with real, random and malformed ids, and makes headers (credentials, ``Content-Type``,
``Idempotency-Key``) and a body of the route's shape with some members made hostile: lone
surrogates, NaN, huge numbers, deep nesting, undecodable bytes, bodies over the size limit.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

import attrs

from contractsdk.sandbox import SandboxServer
from contractsdk.sandbox._catalog import Term

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_WEIRD_SEGMENTS = (
    "",
    "0",
    "-1",
    "abc",
    "1.5",
    "0x10",
    "1e3",
    " 7",
    "+7",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "9" * 30,
    "%00",
    "%ED%A0%80",
    "%FF",
    "%F0%9F%8F%A0",
    "..",
    "%2e%2e",
    "%2F",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: a digit to str.isdigit, not to an int64 parser
    "ü",
    "a" * 300,
)
_HOSTILE_STRINGS = (
    "",
    " ",
    "\t\n",
    "\ud800",
    "ok\udfff",
    "\udcff",
    "a\x00b",
    "\u202e\u200b",
    "🏠 Ünïcödé",
    "x" * 300,
    "x" * 5000,
    "NaN",
    "null",
    "<script>alert(1)</script>",
    "../../__sandbox/reset",
)


@attrs.frozen
class _Raw:
    """JSON text inserted verbatim (literals json.dumps will not write)."""

    text: str


_HOSTILE_LITERALS = (
    _Raw("NaN"),
    _Raw("Infinity"),
    _Raw("-Infinity"),
    _Raw("1e400"),
    _Raw("-1e400"),
    _Raw("1" * 4000),
    _Raw("1" * 5000),
    _Raw("1.0e-400"),
    _Raw("-0"),
    _Raw('"\\ud800"'),
    _Raw('"\\udc00\\ud800"'),
    _Raw('"\\u0000"'),
)


def _encode(value: Any) -> str:
    """Encode like json.dumps, but with _Raw pieces and lone surrogates kept as escapes."""
    if isinstance(value, _Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{_encode(str(k))}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    return json.dumps(value)  # ensure_ascii: a lone surrogate becomes a \udXXX escape


class _Fuzzer:
    """Builds random requests from the emulator's real routes and its live data.

    Most requests are plausible (a real id, a body of the route's shape, a member of the
    team, a term of the contract's template) with a few members made hostile, so that
    they get past the first checks and reach the deeper ones.
    """

    def __init__(self, server: SandboxServer, rng: random.Random) -> None:
        self.server = server
        self.rng = rng
        self.routes = sorted(
            {
                (route.method, route.resource.canonical)
                for route in server.app.router.routes()
                if route.resource is not None and route.method != "HEAD"
            }
        )
        # Routes that take a body are where state changes: three times as likely.
        self.weights = [3 if method in ("POST", "PUT", "PATCH") else 1 for method, _ in self.routes]
        self.catalog = server.seed.catalog
        self.templates = list(self.catalog.templates.values())
        self.all_terms = [term for t in self.templates for term in t.by_id.values()]
        self.ids: dict[str, list[int]] = {
            "userId": [u.id for u in server.users],
            "teamId": [t.id for t in server.teams],
            "typeId": [t.id for t in self.catalog.types],
            "templateId": [t.id for t in self.templates],
            "termId": [t.id for t in self.all_terms[::7]],
            "contractId": [],
            "collaboratorId": [],
        }
        self.identity = server.seed.catalog.identity

    def learn(self) -> None:
        """Add the ids that accepted requests created to the ones paths are built from."""
        state = self.server.state
        for name, live in (
            ("userId", state.users),
            ("teamId", state.teams),
            ("contractId", state.contracts),
            ("collaboratorId", state.collaborators),
        ):
            known = self.ids[name]
            known.extend(i for i in live if i not in known)

    # --- values ------------------------------------------------------------------------

    def deep(self) -> _Raw:
        depth = self.rng.choice((50, 500, 900, 990, 1500, 5000, 100_000))
        opener, closer = self.rng.choice((("[", "]"), ('{"a":', "}")))
        return _Raw(opener * depth + "1" + closer * depth)

    def hostile(self, depth: int = 0) -> Any:
        rng = self.rng
        kind = rng.randrange(10)
        if kind == 0:
            return rng.choice(_HOSTILE_STRINGS)
        if kind == 1:
            return rng.choice(_HOSTILE_LITERALS)
        if kind == 2:
            return rng.choice(
                (0, -1, 1.5, 5e-324, 1e308, 2**63, -(2**63) - 1, 10**30, True, False, None)
            )
        if kind == 3:
            return self.deep()
        if kind == 4 and depth < 3:
            return [self.hostile(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 5 and depth < 3:
            return {rng.choice(_HOSTILE_STRINGS): self.hostile(depth + 1)}
        if kind == 6:
            return rng.choice(self.ids[rng.choice(list(self.ids))] or [0])
        if kind == 7:
            return {}
        if kind == 8:
            return []
        return rng.choice(("ok", "Team " + str(rng.randrange(1000)), "a@b.co"))

    def maybe(self, good: Any) -> Any:
        """Mostly the good value; else the good text with an odd code point, or anything."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.8:
            return good
        if roll < 0.9 and isinstance(good, str):
            return good + rng.choice(("\ud800", "\udfff", "\udcff", "\x00", " 🏠", "\u202e"))
        return self.hostile()

    def fields(self, terms: Sequence[Term], depth: int = 0) -> Any:
        rng = self.rng
        if rng.random() < 0.05:
            return self.hostile()
        chosen = rng.sample(list(terms), k=min(len(terms), rng.randrange(5)))
        out: list[Any] = [self.field(term, depth) for term in chosen]
        if rng.random() < 0.05:
            out.append(self.hostile())
        return out

    def field(self, term: Term, depth: int) -> Any:
        rng = self.rng
        if rng.random() < 0.05:  # a term of another template, or of another level
            term = rng.choice(self.all_terms)
        entry: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.6:
            entry["name"] = self.maybe(term.name)
        elif roll < 0.9:
            entry["id"] = self.maybe(term.id)
        else:
            entry["id"], entry["name"] = term.id, self.maybe(term.name)
        option = rng.choice(term.options) if term.options else None
        if rng.random() < 0.9:
            good = option.value if option else rng.choice(("Some text", "住宅 🏠", "", None))
            entry["value"] = self.maybe(good)
        if option is not None and option.nested and depth < 4 and rng.random() < 0.7:
            entry["nested_fields"] = self.fields(option.nested, depth + 1)
        if rng.random() < 0.03:
            entry[rng.choice(("nestedFields", "\ud800", "extra"))] = self.hostile()
        return entry

    def contract_body(self, team_id: int | None, contract_id: int | None) -> dict[str, Any]:
        rng = self.rng
        state = self.server.state
        contract = state.contracts.get(contract_id) if contract_id is not None else None
        team = state.teams.get(team_id) if team_id is not None else None
        if contract is not None:
            template = self.catalog.templates[contract.template_id]
        elif team is not None:
            ctype = rng.choice(self.catalog.types_for_team(team.id))
            template = self.catalog.templates[rng.choice(ctype.template_ids)]
        else:
            template = rng.choice(self.templates)
        members = [*team.owner_ids, *team.member_ids] if team is not None else []
        body: dict[str, Any] = {
            "created_by_user_id": self.maybe(rng.choice(members or self.ids["userId"])),
            "template_id": self.maybe(template.id),
        }
        if rng.random() < 0.8:
            body["fields"] = self.fields(template.terms)
        if rng.random() < 0.1:
            body["source_contract"] = self.maybe(rng.choice(self.ids["contractId"] or [1]))
        return body

    def identity_values(self, template_id: int | None, *, flat: bool) -> Any:
        """Identity values of a template's form (any side), some hostile."""
        rng = self.rng
        form = self.identity.get(template_id or 0) or rng.choice(list(self.identity.values()))
        if rng.random() < 0.05:
            return self.hostile()
        fields = rng.sample(list(form.by_id.values()), k=min(len(form.by_id), rng.randrange(4)))
        out: list[Any] = []
        for field in fields:
            value = rng.choice(field.option_names) if field.options else "Some value"
            if field.validation_type == "EMAIL":
                value = rng.choice(("a@example.com", "not-an-email"))
            raw_id: Any = str(field.id) if flat else field.id
            out.append({"id": self.maybe(raw_id), "value": self.maybe(value)})
        return out

    def party_body(self, template: str, ids: dict[str, int | None]) -> Any:
        """A plausible body for the party routes (#24–#33), or None for other routes."""
        rng = self.rng
        maybe = self.maybe
        state = self.server.state
        roles = [rng.choice(("party", "signatory", "witness", "collaborator", "boss"))]
        if rng.random() < 0.2:
            roles.append("collaborator")
        contract = state.contracts.get(ids.get("contractId") or 0)
        collaborator = state.collaborators.get(ids.get("collaboratorId") or 0)
        of = collaborator.contract_id if collaborator is not None else None
        template_id = (
            contract.template_id
            if contract is not None
            else state.contracts[of].template_id
            if of is not None
            else ids.get("templateId")
        )
        if template.endswith("/collaborators"):
            team = state.teams.get(contract.team_id) if contract is not None else None
            inviters = [*team.owner_ids, *team.member_ids] if team is not None else []
            return {
                "userId": maybe(rng.choice(self.ids["userId"])),
                "inviterId": maybe(rng.choice(inviters or self.ids["userId"])),
                "role": maybe(roles),
                "side": maybe(rng.choice(("first", "second", "both"))),
                "identityFields": self.identity_values(template_id, flat=False),
            }
        if template.endswith("/company"):
            return {
                "company_name": maybe("Fuzz Ltd"),
                "side": maybe(rng.choice(("first", "second"))),
                "role": maybe("party"),
                "registered_office_address": {"country": maybe("GB")},
                "signatory_related_company": maybe(rng.choice(self.ids["collaboratorId"] or [1])),
            }
        if template.endswith("/updatefields"):
            return {
                "collaborator_id": maybe(rng.choice(self.ids["collaboratorId"] or [1])),
                "roles": maybe(roles),
                "side": maybe("both"),
            }
        if template.endswith("/roles"):
            return {"roles": maybe(roles)}
        if template == "/v1/collaborators/{collaboratorId}/fields":
            return {"fields": self.identity_values(template_id, flat=True)}
        return None

    def signature_body(self, headers: dict[str, str]) -> bytes:
        """A multipart body holding a PNG, a GIF, nothing or junk (for the signature route)."""
        rng = self.rng
        boundary = "fuzzboundary"
        headers["Content-Type"] = rng.choice(
            (f"multipart/form-data; boundary={boundary}", "multipart/form-data", "image/png")
        )
        data = rng.choice(
            (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, b"\xff\xd8\xff\xe0", b"GIF89a", b"", b"--")
        )
        disposition = rng.choice(('name="file"; filename="s.png"', 'name="x"', "", "\xff"))
        part = f"--{boundary}\r\nContent-Disposition: form-data; {disposition}\r\n\r\n"
        return part.encode("utf-8", "surrogateescape") + data + f"\r\n--{boundary}--\r\n".encode()

    def body_for(self, template: str, ids: dict[str, int | None]) -> Any:
        """A plausible body for the route, with some members replaced by hostile values."""
        rng = self.rng
        maybe = self.maybe
        if template == "/v1/users":
            body = {
                "email": maybe(f"fuzz{rng.randrange(10**6)}@example.com"),
                "first_name": maybe("Fuzz"),
                "last_name": maybe("Tester"),
            }
            if rng.random() < 0.3:
                body["avatar"] = maybe("https://example.com/a.png")
            return body
        if template in ("/v1/users/{userId}/teams", "/v1/teams/{teamId}"):
            return {"name": maybe("Fuzz team")}
        if template in ("/v1/teams/{teamId}/contracts", "/v1/contracts/{contractId}"):
            return self.contract_body(ids.get("teamId"), ids.get("contractId"))
        party = self.party_body(template, ids)
        if party is not None:
            return party
        if template == "/oauth/token":
            return {
                "grant_type": maybe("client_credentials"),
                "client_id": maybe(self.server.client_id),
                "client_secret": maybe(self.server.client_secret),
                "audience": maybe("https://api.example"),
            }
        if template.endswith("/members"):
            return {"user_id": maybe(rng.choice(self.ids["userId"])), "role": maybe("member")}
        if template == "/__sandbox/faults":
            return {"rules": [{"route": maybe("GET /v1/nothing"), "latency": self.hostile()}]}
        if template == "/__sandbox/limits":
            return {rng.choice(("read_rate", "write_rate", "burst")): self.hostile()}
        return self.hostile()

    def body_bytes(self, template: str, ids: dict[str, int | None]) -> bytes | None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            return None
        if roll < 0.1:
            return rng.choice(
                (
                    b"",
                    b"{",
                    b"\xff\xfe{}",
                    b'{"name": "\xed\xa0\x80"}',  # a surrogate as raw (CESU-8) bytes
                    b'{"name": "\xc3"}',
                    json.dumps({"name": "utf-16"}).encode("utf-16"),
                    b"\xef\xbb\xbf{}",
                    b"name=x&email=y",
                    b"\x00" * 64,
                )
            )
        if roll < 0.13:
            return self.deep().text.encode()
        if roll < 0.14:
            return b'{"x": "' + b"a" * (1024 * 1024 + 10) + b'"}'
        text = _encode(self.body_for(template, ids))
        return text.encode("utf-8", "surrogatepass")

    def segment(self, name: str) -> str:
        rng = self.rng
        roll = rng.random()
        known = self.ids.get(name) or []
        if roll < 0.8 and known:
            return str(rng.choice(known))
        if roll < 0.9:
            return str(rng.choice((rng.randrange(10**6), rng.randrange(2**63), -rng.randrange(9))))
        return rng.choice(_WEIRD_SEGMENTS)

    def path(self, template: str) -> tuple[str, dict[str, int | None]]:
        """A path for the route, and the id each placeholder got (None when not an int)."""
        rng = self.rng
        ids: dict[str, int | None] = {}

        def fill(match: re.Match[str]) -> str:
            segment = self.segment(match.group(1))
            ids[match.group(1)] = int(segment) if re.fullmatch(r"-?[0-9]+", segment) else None
            return segment

        path = _PLACEHOLDER.sub(fill, template)
        roll = rng.random()
        if roll < 0.03:
            path += "/" + rng.choice(_WEIRD_SEGMENTS)
        elif roll < 0.05:
            path = path.rsplit("/", 1)[0] or "/"
        elif roll < 0.07:
            path = path.replace("/v1", rng.choice(("", "/v2", "/V1", "//v1")), 1)
        if (
            template.endswith("/fields")
            and template.startswith("/v1/templates")
            and rng.random() < 0.7
        ):
            path += "?" + rng.choice(
                (
                    "roles=party&side=first",
                    "roles=party&roles=collaborator&side=both",
                    "roles=witness,party",
                    "roles=boss&side=middle",
                    "roles=party&side=second",
                )
            )
        elif rng.random() < 0.1:
            path += "?" + rng.choice(("roles=party&side=first", "a=%FF", "x", "=&&=", "%ED%A0%80"))
        return path, ids

    def headers(self, template: str) -> dict[str, str]:
        rng = self.rng
        headers: dict[str, str] = {}
        roll = rng.random()
        if template.startswith("/__sandbox/") and roll < 0.5:
            headers["Authorization"] = f"Bearer {self.server.admin_token}"
        elif roll < 0.85:
            headers["Authorization"] = f"Bearer {self.server.api_key}"
        elif roll < 0.97:
            headers["Authorization"] = rng.choice(
                (
                    "Bearer",
                    "Bearer ",
                    "bearer nope",
                    "Basic " + "é" * 4,
                    "Basic !!!",
                    "Basic Og==",
                    "Token abc",
                    "Bearer " + "x" * 5000,
                    "Bearer ü",
                )
            )
        if rng.random() < 0.9:
            headers["Content-Type"] = rng.choice(
                (
                    *["application/json"] * 8,
                    "application/json; charset=utf-16",
                    "application/problem+json",
                    "text/plain",
                    "application/x-www-form-urlencoded",
                    "multipart/form-data; boundary=",
                    ";;;",
                    "application/json; charset",
                    "",
                    "é/è",
                )
            )
        if rng.random() < 0.15:
            headers["Idempotency-Key"] = rng.choice(("k1", "k2", " ", "x" * 300, "ü", "k\u00e9"))
        return headers
