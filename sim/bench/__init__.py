"""Benchmarks: the solver benchmark, the peers (diffrax, torchdiffeq, torchode), the searches' benchmarks."""
