"""Training curves: each job's results file, read once, as a table and as figures."""
