"""Benchmarks: the solver benchmark, the peers (diffrax, torchdiffeq), the searches' benchmarks."""
