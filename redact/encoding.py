"""HTTP content codings of captured bodies: identity, gzip, deflate, br and zstd.

gzip and deflate come with Python. br needs ``brotli`` and zstd needs ``backports.zstd`` (or
``zstandard``, or Python 3.14's ``compression.zstd``): mitmproxy brings them, so the proxy always
has them, while an importer without ``callgate[proxy]`` names the missing package instead.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from callgate.reassemble.errors import InputError, SetupError

CODINGS = ("gzip", "deflate", "br", "zstd")


def _brotli() -> Callable[[bytes], bytes]:
    try:
        import brotli
    except ImportError:
        raise SetupError(
            "content-encoding br needs the brotli package (pip install brotli, or callgate[proxy])"
        ) from None
    return brotli.Decompressor().process  # type: ignore[no-any-return]


def _zstd() -> Callable[[bytes], bytes]:
    try:
        from compression import zstd  # Python 3.14

        return zstd.ZstdDecompressor().decompress  # type: ignore[no-any-return]
    except ImportError:
        pass
    try:
        from backports import zstd as backport  # mitmproxy 12

        return backport.ZstdDecompressor().decompress  # type: ignore[no-any-return]
    except ImportError:
        pass
    try:
        import zstandard  # mitmproxy 11
    except ImportError:
        raise SetupError(
            "content-encoding zstd needs the backports.zstd package "
            "(pip install backports.zstd, or callgate[proxy])"
        ) from None
    return zstandard.ZstdDecompressor().decompressobj().decompress


class Decompressor:
    """Incremental content decoding, one piece of the body at a time.

    Raises ``InputError`` for an unknown coding and ``SetupError`` when its package is absent.
    """

    def __init__(self, encoding: str) -> None:
        name = encoding.strip().lower()
        self.encoding = name
        self._decode: Callable[[bytes], bytes]
        if name in ("", "identity"):
            self._decode = bytes
        elif name in ("gzip", "x-gzip", "deflate"):
            # wbits=47 reads both gzip and zlib headers; raw deflate is handled on first use.
            self._zlib = zlib.decompressobj(wbits=47)
            self._inflated = False
            self._decode = self._inflate
        elif name == "br":
            self._decode = _brotli()
        elif name == "zstd":
            self._decode = _zstd()
        else:
            raise InputError(f"unsupported content-encoding {name!r}")

    def __call__(self, data: bytes) -> bytes:
        return self._decode(data) if data else b""

    def _inflate(self, data: bytes) -> bytes:
        try:
            out = self._zlib.decompress(data)
        except zlib.error:
            if self._inflated:  # real corruption after a good start
                raise
            self._zlib = zlib.decompressobj(wbits=-15)  # headerless deflate
            out = self._zlib.decompress(data)
        self._inflated = True
        return out

    @property
    def complete(self) -> bool:
        """Whether a gzip or deflate body reached its end (other codings cannot tell)."""
        return self._zlib.eof if self.encoding in ("gzip", "x-gzip", "deflate") else True


def decode_whole(body: bytes, coding: str) -> bytes:
    """A whole body without ``coding``. Raises ``InputError`` when the body is not valid in that
    coding or ends before it does, and ``SetupError`` when the decoder is not installed."""
    decompressor = Decompressor(coding)
    try:
        decoded = decompressor(body)
    except Exception as error:  # zlib.error, brotli.error, zstd's own errors
        raise InputError(f"not valid {coding}: {error}") from None
    if not decompressor.complete:
        raise InputError(f"{coding} body ends early")
    return decoded
