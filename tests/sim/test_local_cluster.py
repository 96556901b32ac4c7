"""``--workers K`` (``sim.conjectures.distributed.connect``): the LocalCluster of a search or a suite speaks mutual TLS
on loopback with a key made for it alone, so another user of the machine cannot run code in its workers."""

import pytest


def test_a_local_cluster_speaks_tls_and_refuses_a_client_without_its_key():
    """``--workers K``: the LocalCluster listens on loopback over mutual TLS with a key made for it alone; a plain
    client and a TLS client with certificates of another authority are both turned away (another user of the machine)."""
    from distributed import Client
    from distributed.security import Security

    from sim.conjectures.distributed import connect

    stack, client = connect(workers=1, scheduler=None)
    with stack:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        with pytest.raises(OSError):  # distributed's CommClosedError / timeout are OSErrors
            Client(address.replace("tls://", "tcp://"), timeout="3s")
        with pytest.raises(OSError):
            Client(address, security=Security.temporary(), timeout="3s")
