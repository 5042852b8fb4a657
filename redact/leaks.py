"""The last gate before a fixture is written: does it still hold a secret?

Two nets: every credential value seen in the exchange (header values, query values, cookies),
also in base64 and URL-encoded form; and the formats of well-known credentials. A hit names the
JSON path and which net caught it, never the secret itself.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

from callgate.reassemble.profiles import version_headers
from callgate.redact.exchange import Exchange

#: Named formats of credentials (prefixes published by the providers; cf. gitleaks rules).
PATTERNS: dict[str, re.Pattern[str]] = {
    "anthropic-key": re.compile(r"sk-ant-[A-Za-z0-9_-]{16,}"),
    "openai-key": re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    "google-api-key": re.compile(r"AIza[0-9A-Za-z_-]{30,}"),
    "groq-key": re.compile(r"gsk_[A-Za-z0-9]{20,}"),
    "xai-key": re.compile(r"xai-[A-Za-z0-9]{20,}"),
    "huggingface-token": re.compile(r"hf_[A-Za-z0-9]{20,}"),
    "aws-access-key": re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    "github-token": re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    "jwt": re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    "bearer-token": re.compile(r"[Bb]earer\s+[A-Za-z0-9._~+/-]{12,}"),
}
#: The patterns for a value written out as JSON: white space inside a string is written as an
#: escape there (``\\n``, ``\\u001c``), which the bearer pattern must see too. Searched one by
#: one: each then starts with a literal the search skips to, where their alternation tried every
#: pattern at every character. ``[Bb]`` is left off the bearer pattern for the same reason: what
#: follows it still finds every bearer token, and a hit is only a reason to walk the strings,
#: which the exact patterns then judge.
_SCREENS = tuple(
    re.compile(
        pattern.pattern.replace("[Bb]earer", "earer").replace(
            "\\s+", r"(?:\s|\\[bfnrt]|\\u00[01][0-9a-fA-F])+"
        )
    )
    for pattern in PATTERNS.values()
)
#: Values shorter than this are too common ("gzip", "true") to be told apart from secrets.
MIN_SECRET_CHARS = 8
#: Headers whose values are never secrets, so they are not searched for.
_HARMLESS_HEADERS = frozenset(
    {
        "content-type",
        "content-length",
        "accept",
        "accept-encoding",
        "connection",
        "host",
        "user-agent",
        "transfer-encoding",
        "date",
        "cache-control",
        "te",
        *version_headers(),
    }
)
#: The OpenAI and Anthropic SDKs' version and platform headers (x-stainless-os, ...).
_HARMLESS_PREFIX = "x-stainless-"


_CREDENTIAL_NAME = re.compile(
    r"auth|key|token|secret|cookie|session|passw|signature|credential|organi[sz]ation|project"
)
#: A value shaped like a token: long, no spaces, letters and digits both.
_TOKEN_LIKE = re.compile(r"(?=.*[A-Za-z])(?=.*\d)[A-Za-z0-9_\-.+/=:~]{16,}")


@dataclass(frozen=True)
class Leak:
    path: str
    caught_by: str


def secrets_of(exchange: Exchange) -> set[str]:
    """Credential values of an exchange: values of headers named like credentials, token-like
    values of any other header, cookie values, query values, and the token after a scheme word
    (``Bearer``, ``Basic``, ``Token``, or a token-like one after any other)."""
    values: set[str] = set()
    for name, value in exchange.request_headers + exchange.response_headers:
        lower = name.lower()
        if lower in _HARMLESS_HEADERS or lower.startswith(_HARMLESS_PREFIX):
            continue
        if _CREDENTIAL_NAME.search(lower) or _TOKEN_LIKE.fullmatch(value):
            values.update(_header_values(name, value))
    values.update(value for _, value in parse_qsl(urlsplit(exchange.url).query))
    return {v for v in values if len(v) >= MIN_SECRET_CHARS}


def credential_header(name: str, value: str) -> bool:
    """Whether a request header named like a credential (``authorization``, ``x-api-key``) holds
    a token-like value, whole or after a scheme word (``Bearer``, ``Basic``, ``Token``, or any
    other: ``ApiKey``, a gateway's own): what a recording must not keep even when the token has
    no known format."""
    if not _CREDENTIAL_NAME.search(name.lower()):
        return False
    _, _, token = value.partition(" ")
    return bool(_TOKEN_LIKE.fullmatch(value) or (token and _TOKEN_LIKE.fullmatch(token.strip())))


def _header_values(name: str, value: str) -> Iterator[str]:
    yield value
    scheme, _, token = value.partition(" ")
    if token and (scheme.lower() in ("bearer", "basic", "token") or _TOKEN_LIKE.fullmatch(token)):
        yield token.strip()  # after any scheme word, as ``credential_header`` reads it
    if name.lower() in ("cookie", "set-cookie"):
        for part in value.split(";"):
            yield part.partition("=")[2].strip()


def encodings(secret: str) -> set[str]:
    """``secret`` as it could appear: plain, URL-encoded and base64 at every byte alignment
    (only the characters a surrounding blob cannot change are kept)."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret)}
    raw = secret.encode()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        # Characters holding only the secret's own bits: from ceil(8*shift/6) up to the last
        # character that ends inside it.
        stable = encoded[-(-8 * shift // 6) : (8 * (shift + len(raw))) // 6]
        if len(stable) >= MIN_SECRET_CHARS:
            forms.add(stable)
            forms.add(stable.replace("+", "-").replace("/", "_"))
    return forms


def find_leaks(value: object, secrets: Iterable[str], text: str | None = None) -> list[Leak]:
    """Leaks in a JSON value, keys included: any encoding of a secret, or a credential format,
    each with the JSON pointer of the string it is in. ``text`` is the value as written out
    with ``ensure_ascii=False`` in any layout, when the caller has it (the fixture it writes).

    How this works: the value is written out once as JSON (the C encoder) and searched as one
    text; only when something is found there are its strings walked to name where. The search
    cannot miss what the walk would find: writing a string out changes only ``"``, ``\\`` and
    control characters, so each needle is also searched in its escaped form, and the one format
    that allows white space also matches the escapes white space becomes. Layout between the
    strings only adds text the search may find something in, which the walk then decides."""
    needles = {form for secret in secrets for form in encodings(secret)}
    if text is None:
        text = json.dumps(value, ensure_ascii=False, check_circular=False)
    escaped = {json.dumps(form, ensure_ascii=False)[1:-1] for form in needles}
    if not any(form in text for form in needles | escaped) and not any(
        screen.search(text) for screen in _SCREENS
    ):
        return []
    return _leaks_at(json_strings(value), needles)


def _leaks_at(strings: Iterable[tuple[str, str]], needles: set[str]) -> list[Leak]:
    leaks = []
    for path, text in strings:
        hit = "credential-from-exchange" if any(form in text for form in needles) else None
        hit = hit or next(
            (name for name, pattern in PATTERNS.items() if pattern.search(text)), None
        )
        if hit:
            leaks.append(Leak(path, hit))
    return leaks


def pointer_token(key: object) -> str:
    """A member name as one token of a JSON pointer (RFC 6901: ``~`` and ``/`` escaped)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def json_strings(value: object, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value, keys included, with its JSON pointer."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, child in value.items():
            token = pointer_token(key)
            yield f"{path}/{token}", str(key)
            yield from json_strings(child, f"{path}/{token}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from json_strings(child, f"{path}/{index}")
