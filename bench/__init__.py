"""hostlink benchmarks: each compares hostlink with the floor it wraps, in one run."""
