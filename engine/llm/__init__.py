"""LLM minds through litellm (imported lazily: only when an LLM model is chosen)."""
