"""callgate where a team already looks: inside its LLM gateway (``callgate.integrations.litellm``,
LiteLLM's proxy) and in its traces (``callgate.integrations.otel``, OpenTelemetry).

Each module needs its extra (``callgate[litellm]``, ``callgate[otel]``); nothing else in callgate
imports them, and they import their libraries only when used.
"""
