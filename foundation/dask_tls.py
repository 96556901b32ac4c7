"""Mutual TLS for a Dask client (``--tls-ca-file``, ``--tls-cert``, ``--tls-key`` of ``search`` and ``suite``).

A Dask scheduler reached without TLS runs the code of anyone who reaches it, in its workers and, through pickled
results, in the client (docs/searches.md). Within :func:`tls_config` a client speaks mutual TLS with the scheduler.
"""

from __future__ import annotations

from pathlib import Path


def tls_config(ca_file: str | None, cert: str | None, key: str | None):
    """A context manager in which a Dask client speaks mutual TLS with the three files (the Dask configuration
    ``distributed.comm.tls.*``, which ``distributed.security.Security()`` reads, encryption required); a no-op when
    none is given. A ``ValueError`` naming the option when one is missing or unreadable."""
    import contextlib

    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return contextlib.nullcontext()
    for option, path in given.items():
        if not path:
            raise ValueError(f"{option} is missing: TLS needs --tls-ca-file, --tls-cert and --tls-key together.")
        if not Path(path).is_file():
            raise ValueError(f"{option} {path} must be a readable file (PEM).")
    import dask

    return dask.config.set({"distributed.comm.tls.ca-file": ca_file, "distributed.comm.tls.client.cert": cert,
                            "distributed.comm.tls.client.key": key, "distributed.comm.require-encryption": True})
