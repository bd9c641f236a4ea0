"""Run saves, bottom up: atomic writes, a round file (``roundfile``), a run's round files and
index (``runfiles``), the rounds as a sequence (``history``), run metadata (``runmeta``) and
the saves folder (``store``)."""
