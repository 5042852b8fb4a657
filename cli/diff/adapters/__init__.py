"""``callgate diff``'s runner (``runner.py``): a standalone script run by an interpreter that has
the adapter's library, which need not be callgate's own."""
