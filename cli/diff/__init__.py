"""``callgate diff``: what a real accumulator hands a tool runner, beside callgate's verdict. The
command (``command``) runs each adapter's runner (``adapters/runner.py``) in an interpreter that
has its library."""
