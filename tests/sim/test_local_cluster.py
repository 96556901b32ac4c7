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


def test_a_local_cluster_serves_no_http_pages():
    """The referee's probe: with ``dashboard_address=None`` the scheduler and each worker still served plain-HTTP
    pages (identity, workers, logs, call stacks) to anyone on the machine. Each server now answers 404 to every route
    the referee read; the control is that the server is there, answering its sitemap."""
    import json
    import urllib.error
    import urllib.request

    from sim.conjectures.distributed import connect

    stack, client = connect(workers=1, scheduler=None)
    with stack:
        ports = [client.scheduler_info()["services"].get("dashboard")]
        ports += [worker["services"].get("dashboard") for worker in client.scheduler_info()["workers"].values()]
        assert all(ports), ports
        for port in ports:
            for route in ("/json/identity.json", "/info/main/workers.html", "/info/logs", "/info/call-stacks",
                          "/eventstream", "/health"):
                with pytest.raises(urllib.error.HTTPError) as answer:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=5)
                assert answer.value.code == 404, (port, route)
            # the one page left is the server's own list of its pages: itself alone (it listed logs and call stacks)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/sitemap.json", timeout=5) as answer:
                assert json.loads(answer.read()) == {"paths": ["/sitemap.json"]}
