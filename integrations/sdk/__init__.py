"""Gate tool calls inside the app: ``guard`` wraps the stream an SDK returned, ``guarded`` a
client whose streamed calls come back guarded. The sans-I/O part, the hold-and-judge rule and the
table of SDK objects, is ``callgate.reassemble.gate``."""

from callgate.integrations.sdk.clients import guarded
from callgate.integrations.sdk.wrap import guard

__all__ = ["guard", "guarded"]
