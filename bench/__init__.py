"""ollie's benchmarks: `./scripts/bench` (or `python -m bench`) runs them all and writes bench/RESULTS.md."""
