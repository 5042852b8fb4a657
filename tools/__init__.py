"""Scripts that only work from a checkout: the demo driver, the docs generator, the mutation
tester and the stream tap's outputs."""
