"""The round loop (``simulation``: the run-control API) and what a round calls: its three
phases (``phases``), the update step (``updates``), progress events, the game master;
and replay of a saved run."""
