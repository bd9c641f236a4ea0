"""Studies over many runs or about runs: the study families (``families``: GovSim, debate)
and what a run's target opens (``targets``: a task or a scenario), tasks, trials and sweeps,
surveys and ratings, labels, run diffs and cost estimates."""
