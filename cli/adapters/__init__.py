"""Runner scripts for ``callgate diff``: one per adapter, each run by the adapter's interpreter.

Each ``X.py`` here is a standalone script (standard library plus its adapter's own library, no
callgate imports): it reads one envelope JSON on stdin and prints one JSON line, ``{"adapter",
"version", "calls", "finish", "error"}``, or exits 3 with ``{"missing": "<pip package>"}``.
The libraries are imported with ``importlib`` so that mypy checks these files the same whether or
not the library happens to be installed in callgate's own environment.
"""
