"""Benchmark package: `python -m bench` runs the core measurements and every topic module
(bench/<topic>.py with `measure(model) -> dict`), and prints one JSON object as its last line."""
