"""Scripts that only work from a checkout: the demo driver and the docs generator."""
