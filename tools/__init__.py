"""Scripts that only work from a checkout: the demo driver, the docs generator, the mutation
score, the build backend and the stream tap's outputs."""
