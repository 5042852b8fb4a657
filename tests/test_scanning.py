"""``callgate.redact.scanning`` on data, no file: which encodings a credential is found in,
which pattern names it, and where a finding says it is."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from callgate.redact.leaks import PATTERNS
from callgate.redact.scanning import Kind, ScanFinding, scan_body, scan_document
from callgate.redact.scanning.text import credential_patterns
from tests.scan_canaries import KEYS, OPENAI_KEY

ANTHROPIC = KEYS["anthropic-key"]


def test_a_key_is_found_plain_url_encoded_base64_base64url_and_compressed() -> None:
    wrapped = f"note: {ANTHROPIC}?"
    forms = {
        "plain": wrapped,
        "url": quote(wrapped, safe=""),
        "base64": base64.b64encode(wrapped.encode()).decode(),
        "base64url": base64.urlsafe_b64encode(b"\xfb\xff" + wrapped.encode()).decode(),
        "gzip in base64": base64.b64encode(gzip.compress(wrapped.encode())).decode(),
        "zlib in base64": base64.b64encode(zlib.compress(wrapped.encode())).decode(),
        "base64 in URL": quote(base64.b64encode(wrapped.encode()).decode(), safe=""),
        # every character percent-encoded: no base64 run shows until the text is unquoted
        "base64 fully percent-encoded": "".join(
            f"%{byte:02X}" for byte in base64.b64encode(wrapped.encode())
        ),
    }
    found = {name: credential_patterns(text) for name, text in forms.items()}
    assert found == {name: ["anthropic-key"] for name in forms}


def test_a_key_inside_another_format_is_named_once() -> None:
    assert credential_patterns(f"Authorization: Bearer {OPENAI_KEY}") == ["openai-key"]
    assert credential_patterns(ANTHROPIC) == ["anthropic-key"]
    assert credential_patterns("Bearer abcdefghijklmnop") == ["bearer-token"]
    # percent-encoded with no "+": found only once decoded
    assert credential_patterns("Authorization%3A%20Bearer%20abcdefghijklmnop") == ["bearer-token"]
    # form-encoded with "+" for its spaces and no "%": found only once decoded
    assert credential_patterns("Authorization:+Bearer+abcdefghijklmnop") == ["bearer-token"]


def test_two_keys_in_one_string_are_both_named_in_pattern_order() -> None:
    assert credential_patterns(f"{KEYS['jwt']} and {KEYS['aws-access-key']}") == [
        "aws-access-key",
        "jwt",
    ]


def test_every_leak_gate_format_has_a_canary() -> None:
    assert set(KEYS) | {"openai-key", "bearer-token"} == set(PATTERNS)


def test_text_without_credentials_names_none() -> None:
    text = "data: " + json.dumps({"id": "chatcmpl-" + "A1b2" * 8, "sig": "Zm9v" * 20})
    assert credential_patterns(text) == []
    # a run of the base64 alphabet one character past a whole quantum is no base64
    assert credential_patterns("QUJD" * 6 + "Q") == []


def test_sse_and_json_lines_are_named_by_line_and_pointer() -> None:
    body = f'event: delta\ndata: {{"delta": {{"text": "{ANTHROPIC}"}}}}\n\n: {ANTHROPIC}\n'
    assert scan_body(body.encode()) == [
        ScanFinding("line 2 /delta/text", Kind.CREDENTIAL, "anthropic-key"),
        ScanFinding("line 4", Kind.CREDENTIAL, "anthropic-key"),
    ]


def test_a_cassette_header_named_like_a_credential_with_a_token_is_a_finding() -> None:
    interaction = {
        "request": {
            "method": "POST",
            "uri": "https://example.test/v1",
            "headers": {"X-Goog-Api-Key": ["Opaque1234567890abcdef"], "Accept": ["*/*"]},
        },
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": ""}},
    }
    assert scan_document({"interactions": [interaction]}) == [
        ScanFinding(
            "interaction 1 request.headers.x-goog-api-key", Kind.CREDENTIAL, "credential-header"
        )
    ]


def test_a_filtered_cassette_header_is_no_finding() -> None:
    interaction = {
        "request": {"uri": "https://example.test", "headers": {"authorization": ["DUMMY"]}},
        "response": {"body": {"string": "ok"}},
    }
    assert scan_document({"interactions": [interaction]}) == []


def test_json_that_is_no_recording_is_none() -> None:
    documents = ({"name": "app"}, {"profile": ["openai"], "chunks": []}, ["a.json"], 3, "text")
    assert [scan_document(document) for document in documents] == [None] * 5


def test_a_header_credential_of_no_known_format_is_found_again_elsewhere_in_its_exchange() -> None:
    opaque = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"  # an Azure OpenAI key has no prefix
    echoed = base64.b64encode(f"key={opaque};".encode()).decode()
    interaction = {
        "request": {
            "uri": f"https://example.test/v1?api-key={opaque}",
            "headers": {"api-key": [opaque]},
            "body": json.dumps({"model": "m", "metadata": {"k": quote(opaque)}}),
        },
        "response": {"headers": {"x-echo": [echoed]}, "body": {"string": f"data: {opaque}\n"}},
    }
    assert scan_document({"interactions": [interaction]}) == [
        ScanFinding("interaction 1 request.uri", Kind.CREDENTIAL, "credential-from-exchange"),
        ScanFinding("interaction 1 request.headers.api-key", Kind.CREDENTIAL, "credential-header"),
        ScanFinding(
            "interaction 1 request.body /metadata/k", Kind.CREDENTIAL, "credential-from-exchange"
        ),
        ScanFinding(
            "interaction 1 response.headers.x-echo", Kind.CREDENTIAL, "credential-from-exchange"
        ),
        ScanFinding(
            "interaction 1 response.body line 1", Kind.CREDENTIAL, "credential-from-exchange"
        ),
    ]


def test_a_har_entry_finds_a_header_credential_again_in_its_base64_body() -> None:
    opaque = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    entry = {
        "request": {
            "url": "https://example.test/",
            "headers": [{"name": "api-key", "value": opaque}],
        },
        "response": {
            "content": {"encoding": "base64", "text": base64.b64encode(opaque.encode()).decode()}
        },
    }
    assert scan_document({"log": {"entries": [entry]}}) == [
        ScanFinding("/log/entries/0/request/headers/0/value", Kind.CREDENTIAL, "credential-header"),
        ScanFinding(
            "/log/entries/0/response/content/text line 1",
            Kind.CREDENTIAL,
            "credential-from-exchange",
        ),
    ]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=20,
)
KEYED = st.dictionaries(
    st.sampled_from(["interactions", "log", "profile", "chunks", "meta", "request", "messages"]),
    JSON,
)


@given(st.one_of(JSON, KEYED, KEYED.map(lambda d: {**d, "profile": "openai", "chunks": [d]})))
def test_any_json_document_is_judged_without_an_exception(document: object) -> None:
    found = scan_document(document)
    assert found is None or all(isinstance(finding, ScanFinding) for finding in found)


@pytest.mark.parametrize(
    ("name", "value", "flagged"),
    [
        ("authorization", "Bearer 0a1b2c3d4e5f6a7b8c9d", True),
        ("authorization", "ApiKey 0a1b2c3d4e5f6a7b8c9d", True),  # a scheme callgate knows not
        ("x-api-key", "0a1b2c3d4e5f6a7b8c9d", True),
        ("authorization", "Bearer", False),
        ("authorization", "ApiKey short1", False),
        ("authorization", "two words 0a1b2c3d4e5f6a7b8c9d", False),  # no token after the scheme
        ("x-request-id", "Bearer 0a1b2c3d4e5f6a7b8c9d", False),  # not named like a credential
    ],
)
def test_a_credential_header_holds_a_token_whole_or_after_any_scheme(
    name: str, value: str, flagged: bool
) -> None:
    from callgate.redact.leaks import credential_header

    assert credential_header(name, value) is flagged


def test_a_har_credential_outside_its_entries_is_found_where_it_lies() -> None:
    """A page title or a comment of the HAR's own: scanned as any other string."""
    document = {"log": {"pages": [{"title": f"key {ANTHROPIC}"}], "entries": []}}
    assert scan_document(document) == [
        ScanFinding("/log/pages/0/title", Kind.CREDENTIAL, "anthropic-key")
    ]


def test_a_key_is_unwrapped_two_encodings_deep_and_no_deeper() -> None:
    """Base64 of base64 is found (two unwrappings); a third is not a recording's shape, and the
    scan does not spend one on it."""

    def wrapped(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    twice = wrapped(wrapped(f"note: {ANTHROPIC}?"))
    thrice = wrapped(twice)
    assert credential_patterns(twice) == ["anthropic-key"]
    assert credential_patterns(thrice) == []


def test_a_har_header_without_a_text_name_or_value_is_no_credential_and_no_crash() -> None:
    opaque = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    headers = [
        {"name": "api-key", "value": None},
        {"name": None, "value": opaque},
        {"name": "api-key", "value": opaque},
    ]
    entry = {"request": {"url": "https://example.test/", "headers": headers}, "response": {}}
    assert scan_document({"log": {"entries": [entry]}}) == [
        ScanFinding(
            "/log/entries/0/request/headers/1/value", Kind.CREDENTIAL, "credential-from-exchange"
        ),
        ScanFinding("/log/entries/0/request/headers/2/value", Kind.CREDENTIAL, "credential-header"),
    ]


def test_a_tape_records_top_level_is_not_a_request_body() -> None:
    """Its ``request`` is a shape and its members are the record's own: a top-level field named
    like a prompt field is no prompt (the response's text is scanned for credentials only)."""
    record = {
        "tape_record": 1,
        "request": {"route": "openai", "method": "GET", "path": "/v1/models"},
        "response": {"status": 200, "content_type": "application/json", "json": {}},
        "input": "not a prompt",
    }
    assert scan_document(record) == []
