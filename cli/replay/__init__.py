"""``callgate replay``: the runner, the outcome of one fixture, and the reports."""
