"""Benchmarks: the paper's datasets, protocols, runners and reports."""
