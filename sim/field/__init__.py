"""Eq. 6 and its backends: the oracle, the NumPy/BLAS field, the compiled lanes, the manifold."""
