"""``consensus search --scheduler tls://...``: a search over mutual TLS on loopback runs; a client without the
certificate is refused (issue 37, item 5). The certificates are made here with the ``openssl`` command line, as a
cluster's administrator would. A local cluster (``--workers``) makes its own, in memory."""

import json
import shutil
import subprocess

import pytest

from sim.__main__ import main
from sim.conjectures.distributed import run_search

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command line")


def _openssl(*arguments, cwd):
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True)


def _authority(folder, name):
    """A self-signed certificate authority ``name``.pem/.key in ``folder``."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-days", "1", "-subj", f"/CN={name}", cwd=folder)


def _signed(folder, name, authority):
    """A certificate ``name``.pem/.key for 127.0.0.1, signed by ``authority``."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=folder)
    (folder / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{authority}.pem", "-CAkey", f"{authority}.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile", f"{name}.ext", cwd=folder)


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A Dask scheduler and one worker (threads of this process) on 127.0.0.1 that speak mutual TLS only."""
    from distributed import LocalCluster
    from distributed.security import Security

    folder = tmp_path_factory.mktemp("tls")
    _authority(folder, "ca")
    _authority(folder, "stranger")  # another authority: its certificates are not the cluster's
    for name, authority in (("server", "ca"), ("client", "ca"), ("impostor", "stranger")):
        _signed(folder, name, authority)
    server = Security(tls_ca_file=str(folder / "ca.pem"), tls_scheduler_cert=str(folder / "server.pem"),
                      tls_scheduler_key=str(folder / "server.key"), tls_worker_cert=str(folder / "server.pem"),
                      tls_worker_key=str(folder / "server.key"), tls_client_cert=str(folder / "client.pem"),
                      tls_client_key=str(folder / "client.key"), require_encryption=True)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                           security=server, dashboard_address=None)
    try:
        yield cluster.scheduler_address, folder
    finally:
        cluster.close()


def test_a_search_over_tls_runs(tls_cluster, tmp_path, capsys):
    address, certificates = tls_cluster
    assert address.startswith("tls://127.0.0.1:")
    status = main(["search", "--json", "conj.gradient-equilibria", "--method", "random", "--instances", "2",
                   "--chunk-size", "2", "--no-adversarial",
                   "--quiet", "--out", str(tmp_path / "out"), "--scheduler", address,
                   "--tls-ca-file", str(certificates / "ca.pem"), "--tls-cert", str(certificates / "client.pem"),
                   "--tls-key", str(certificates / "client.key")])
    assert status == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["result"].startswith("no certified counterexample")
    local = run_search("conj.gradient-equilibria", 2, tmp_path / "here", chunk_size=2, adversarial=False,
                       progress=False)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["hits"] == local["hits"]


@pytest.mark.parametrize("client", [
    pytest.param(lambda c: ["--tls-ca-file", str(c / "ca.pem"), "--tls-cert", str(c / "impostor.pem"),
                            "--tls-key", str(c / "impostor.key")], id="certificate-of-another-authority"),
    pytest.param(lambda c: ["--tls-ca-file", str(c / "stranger.pem"), "--tls-cert", str(c / "client.pem"),
                            "--tls-key", str(c / "client.key")], id="trusting-another-authority"),
])
def test_a_client_without_the_certificate_is_refused(tls_cluster, tmp_path, capsys, client):
    address, certificates = tls_cluster
    status = main(["search", "conj.gradient-equilibria", "--method", "random", "--instances", "2", "--chunk-size", "2",
                   "--no-adversarial",
                   "--quiet", "--out", str(tmp_path / "out"), "--scheduler", address, *client(certificates)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and f"--scheduler {address}: no Dask scheduler answered" in err[0]
    assert not (tmp_path / "out").exists()


def test_a_client_without_tls_is_refused(tls_cluster, tmp_path):
    """Without a certificate: the API with a Dask configuration naming the authority only, without any TLS
    configuration, and plain TCP."""
    import dask

    address, certificates = tls_cluster
    with dask.config.set({"distributed.comm.tls.ca-file": str(certificates / "ca.pem"),
                          "distributed.comm.tls.client.cert": str(certificates / "missing.pem"),
                          "distributed.comm.require-encryption": True}):
        with pytest.raises(ConnectionError, match=r"--scheduler tls://.*(no Dask scheduler answered|incomplete)"):
            run_search("conj.gradient-equilibria", 2, tmp_path / "a", chunk_size=2, adversarial=False,
                       progress=False, scheduler=address)
    with pytest.raises(ConnectionError, match="a tls:// address needs --tls-ca-file, --tls-cert and --tls-key"):
        run_search("conj.gradient-equilibria", 2, tmp_path / "a", chunk_size=2, adversarial=False, progress=False,
                   scheduler=address)
    with pytest.raises(ConnectionError, match="no Dask scheduler answered"):
        run_search("conj.gradient-equilibria", 2, tmp_path / "b", chunk_size=2, adversarial=False, progress=False,
                   scheduler=address.replace("tls://", "tcp://"))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

