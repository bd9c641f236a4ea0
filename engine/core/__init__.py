"""The ground of the engine: scenarios, run state, the rules of a round, needs, values,
priors and metrics. Imports nothing above it (no minds, LLMs or saves)."""
