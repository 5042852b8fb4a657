"""Scripts that only work from a checkout: the demo driver, the docs generator, the mutation
score and the build backend."""
