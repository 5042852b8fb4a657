"""What a repository's recordings still hold: credentials, prompts and unmasked model output.

Plain functions over parsed documents and bytes, as the rest of ``redact``: reading files and
printing are ``callgate scan``'s (``callgate.cli.scan``). ``scan_document`` judges a parsed
JSON or YAML document (a VCR.py or pytest-recording cassette, a HAR, a callgate fixture, a
tape's exchange record, a request body), ``scan_exchanges`` the exchanges of a mitmproxy flow
file, ``scan_body`` a raw body. Each finding names where it is and which pattern caught it,
never what was found.
"""

from callgate.redact.scanning.documents import scan_body, scan_document, scan_exchanges
from callgate.redact.scanning.findings import PATTERN_DOCS, Kind, ScanFinding
from callgate.redact.scanning.http import RecordedExchange

__all__ = [
    "PATTERN_DOCS",
    "Kind",
    "RecordedExchange",
    "ScanFinding",
    "scan_body",
    "scan_document",
    "scan_exchanges",
]
