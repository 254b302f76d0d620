"""The guard over TLS: certificates are checked against the URL's hostname (SNI and hostname check
keep the name even though the socket goes to the checked address), a CA bundle can be given, and
a certificate that does not verify is the error ``tls``."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from fleet.polling.guard import fetch


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: str, issuer_key, issuer: str, key, *, ca: bool, names=()) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """A test CA and a server certificate for ``localhost`` and 127.0.0.1 signed by it."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("fleetcap test CA", ca_key, "fleetcap test CA", ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = _certificate("localhost", ca_key, "fleetcap test CA", key, ca=False, names=names)
    paths = {"ca": folder / "ca.pem", "cert": folder / "server.pem", "key": folder / "server.key"}
    paths["ca"].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths["key"].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f'{{"host": "{self.headers.get("Host")}"}}'.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def https_port(pki) -> Iterator[int]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki["cert"], pki["key"])
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_a_certificate_from_the_given_ca_verifies_against_the_hostname(https_port, pki):
    result = fetch(f"https://localhost:{https_port}/v1/models", timeout_s=3, verify=str(pki["ca"]))
    assert result.ok, result.message
    assert result.body == f'{{"host": "localhost:{https_port}"}}'.encode()  # the URL's host, not the IP


def test_an_ip_address_in_the_certificate_verifies_too(https_port, pki):
    assert fetch(f"https://127.0.0.1:{https_port}/", timeout_s=3, verify=str(pki["ca"])).ok


def test_an_unknown_ca_is_a_tls_error(https_port):
    result = fetch(f"https://localhost:{https_port}/v1/models", timeout_s=3, verify=True)
    assert result.error == "tls" and result.status is None
    assert "certificate" in result.message.lower()


def test_a_name_the_certificate_does_not_carry_is_a_tls_error(https_port, pki, monkeypatch):
    """``other.test`` resolves to the same checked address, but the certificate is for localhost."""
    import socket

    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        return real("127.0.0.1" if host == "other.test" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    result = fetch(f"https://other.test:{https_port}/", timeout_s=3, verify=str(pki["ca"]))
    assert result.error == "tls" and "other.test" in result.message


def test_verification_can_be_turned_off(https_port):
    assert fetch(f"https://localhost:{https_port}/", timeout_s=3, verify=False).ok


def test_an_unreadable_ca_bundle_is_a_tls_error_with_the_reason(https_port, tmp_path):
    bundle = tmp_path / "not-a-bundle.pem"
    bundle.write_text("this is not a certificate\n")
    result = fetch(f"https://localhost:{https_port}/", timeout_s=3, verify=str(bundle))
    assert result.error == "tls" and "CA bundle" in result.message and "not-a-bundle.pem" in result.message
