"""Many runs: executors, Monte Carlo over seeds, sweeps, the optimizer, the suggested fix
and designs side by side."""
