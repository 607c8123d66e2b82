"""Benchmarks: data, prompts, parsing, metrics, statistics and tables."""
