"""The names of the profiles, in the registry's order, for what must list them without loading
them (the CLI's help); ``callgate.reassemble.profiles.PROFILES`` is the registry itself, and a
test keeps the two equal."""

#: The profiles, in ``PROFILES``' order.
PROFILE_NAMES = (
    "openai",
    "mistral",
    "anthropic",
    "openai-responses",
    "gemini",
    "cohere",
    "ollama",
    "bedrock-converse",
    "openai-realtime",
    "gemini-live",
)
