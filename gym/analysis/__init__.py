"""From a run's record to what users read: metrics, SLO checks, the error budget, why a
design fails, rounding warnings, the rubric and the back-of-the-envelope estimate."""
