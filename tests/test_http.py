"""Request, Response and Headers, and the header parsing they rely on."""

from __future__ import annotations

import email.utils
import pickle

import pytest

from contractsdk import Headers, Request, Response
from contractsdk._headers import parse_retry_after, request_id


class TestHeaders:
    def test_case_insensitive(self) -> None:
        """Lookups ignore case and keep the original spelling for iteration."""
        headers = Headers({"Content-Type": "application/json"})
        assert headers["content-type"] == "application/json"
        assert "CONTENT-TYPE" in headers
        assert list(headers) == ["Content-Type"]

    def test_repr_hides_credentials(self) -> None:
        """Authorization and cookies are redacted in repr; other headers are shown."""
        headers = Headers({"Authorization": "Bearer abc123", "Cookie": "s=1", "Accept": "x"})
        text = repr(headers)
        assert "abc123" not in text and "s=1" not in text and "'Accept': 'x'" in text

    def test_request_repr_hides_the_body(self) -> None:
        """A request's repr leaves out its body (a token request's holds the client secret)."""
        request = Request(
            method="POST", url="https://h/oauth/token", content=b'{"client_secret":"s"}'
        )
        assert "client_secret" not in repr(request)

    def test_request_repr_hides_credentials(self) -> None:
        """A request's repr does not show its bearer token."""
        request = Request(
            method="GET", url="https://h/v1/x", headers={"Authorization": "Bearer t0k"}
        )
        assert "t0k" not in repr(request)

    def test_merged_and_without(self) -> None:
        """Merged replaces case-insensitively; without drops names."""
        headers = Headers({"Accept": "a"}).merged({"accept": "b", "X": "1"})
        assert dict(headers) == {"accept": "b", "X": "1"}
        assert dict(headers.without("x")) == {"accept": "b"}

    def test_pairs_with_are_the_pairs_of_with_header(self) -> None:
        """_pairs_with gives what with_header's copy holds, in its order, the headers unchanged."""
        headers = Headers({"Accept": "a", "X-Key": "1", "User-Agent": "u"})
        for name, value in (("Authorization", "Bearer t"), ("x-key", "2")):
            pairs = headers._pairs_with(name, value)
            assert list(pairs) == headers.with_header(name, value).pairs()
            assert headers._pairs_with(name, value) is pairs  # kept for the same header
        assert headers._pairs_with("Authorization", "Bearer u")[-1] == ("Authorization", "Bearer u")
        assert dict(headers) == {"Accept": "a", "X-Key": "1", "User-Agent": "u"}

    def test_lazy_headers_read_on_first_use_and_pickle(self) -> None:
        """Lazily wrapped headers answer like eager ones, and pickle as plain headers."""
        from multidict import CIMultiDict, CIMultiDictProxy

        headers = Headers.lazy(CIMultiDictProxy(CIMultiDict({"Content-Type": "a", "X-Id": "1"})))
        assert headers.has_any(frozenset({"x-id", "retry-after"}))
        assert not headers.has_any(frozenset({"retry-after"}))
        assert headers["content-type"] == "a" and "x-id" in headers
        assert headers.has_any(frozenset({"x-id"}))  # and once read, from its own index
        copy = pickle.loads(pickle.dumps(headers))
        assert copy == {"content-type": "a", "x-id": "1"}

    def test_equality_with_mappings(self) -> None:
        """Headers equal a dict with the same names in any case."""
        assert Headers({"A": "1"}) == {"a": "1"}
        assert Headers({"A": "1"}) != {"a": "2"}


class TestRequest:
    @pytest.mark.parametrize(
        ("method", "headers", "idempotent"),
        [
            ("GET", {}, True),
            ("DELETE", {}, True),
            ("POST", {}, False),
            ("PATCH", {}, False),
            ("POST", {"Idempotency-Key": "k"}, True),
        ],
    )
    def test_is_idempotent(self, method: str, headers: dict[str, str], idempotent: bool) -> None:
        """Safe methods, and POSTs with an Idempotency-Key, may be replayed."""
        assert Request(method=method, url="https://h/", headers=headers).is_idempotent is idempotent

    def test_path_drops_host_and_query(self) -> None:
        """Path is what error messages show: no host, no query."""
        assert Request(method="GET", url="https://h:1/v1/a?key=x").path == "/v1/a"

    def test_pickles(self) -> None:
        """Requests pickle (errors and job runners move them between processes)."""
        request = Request(method="GET", url="https://h/", headers={"A": "1"})
        assert pickle.loads(pickle.dumps(request)) == request


def test_response_json_and_text() -> None:
    """Response decodes JSON and text, replacing undecodable bytes."""
    response = Response(status_code=200, content=b'{"a": 1}')
    assert response.json() == {"a": 1} and response.is_success
    assert Response(status_code=500, content=b"\xff").text == "\ufffd"


class TestRetryAfter:
    NOW = 1_700_000_000.0

    @pytest.mark.parametrize(
        ("headers", "expected"),
        [
            ({"Retry-After": "3"}, 3.0),
            ({"Retry-After": " 1.5 "}, 1.5),
            ({"retry-after-ms": "250"}, 0.25),
            ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
            ({"retry-after-ms": "bad", "Retry-After": "9"}, 9.0),
            ({"Retry-After": "-1"}, None),
            ({"Retry-After": "nan"}, None),
            ({"Retry-After": "inf"}, None),
            ({"Retry-After": "soon"}, None),
            ({}, None),
        ],
    )
    def test_seconds_forms(self, headers: dict[str, str], expected: float | None) -> None:
        """Seconds and milliseconds are read; negative, infinite and garbage values ignored."""
        assert parse_retry_after(Headers(headers), now=self.NOW) == expected

    def test_http_date(self) -> None:
        """An HTTP-date is turned into seconds from now."""
        date = email.utils.formatdate(self.NOW + 30, usegmt=True)
        assert parse_retry_after(Headers({"Retry-After": date}), now=self.NOW) == 30.0

    def test_past_http_date_is_zero(self) -> None:
        """A date in the past means no wait."""
        date = email.utils.formatdate(self.NOW - 30, usegmt=True)
        assert parse_retry_after(Headers({"Retry-After": date}), now=self.NOW) == 0.0


def test_request_id() -> None:
    """The request id header is found under its common names."""
    assert request_id(Headers({"X-Request-Id": "abc"})) == "abc"
    assert request_id(Headers({})) is None
