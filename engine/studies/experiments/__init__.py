"""Experiments over many runs: the executors that play them (local processes or Ray, one
shared LLM rate limit) and randomised trials from a fork (engine/studies/experiments/trial.py)."""
