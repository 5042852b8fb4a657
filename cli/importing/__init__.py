"""``callgate import``: recordings users already have (HAR, mitmproxy flows, VCR cassettes, raw
bodies) read into exchanges (``read``, one module per format), then redacted into fixtures
(``command``)."""
