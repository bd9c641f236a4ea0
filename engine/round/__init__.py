"""The round loop (``simulation``) and what a round calls: the update step, memory
retention, progress events, the game master and replay."""
