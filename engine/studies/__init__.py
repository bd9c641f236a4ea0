"""Studies over many runs or about runs: GovSim, debate, tasks, trials and sweeps, surveys
and ratings, labels, run diffs and cost estimates."""
