"""Sweeps: conditions × seeds × hyperparameter levels × base models, from a YAML spec."""
