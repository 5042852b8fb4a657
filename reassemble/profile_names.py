"""The names of the profiles, in the registry's order, and the envelope key of each one's stream,
for what must name them without loading them (the CLI's help, the envelope check);
``callgate.reassemble.profiles.PROFILES`` is the registry itself, and a test keeps the two
equal."""

#: Each profile's ``stream_key``, in ``PROFILES``' order.
STREAM_KEYS = {
    "openai": "chunks",
    "mistral": "chunks",
    "anthropic": "events",
    "openai-responses": "events",
    "gemini": "chunks",
    "cohere": "events",
    "ollama": "chunks",
    "bedrock-converse": "events",
    "openai-realtime": "events",
    "gemini-live": "events",
}
#: The profiles, in ``PROFILES``' order.
PROFILE_NAMES = tuple(STREAM_KEYS)
