"""create_ssl_context against a loopback TLS echo server with trustme certificates."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from aiokafkawire.errors import ConfigError
from aiokafkawire.net.tls import create_ssl_context

TIMEOUT = 5.0
KEY_PASSWORD = "k3y-pa55w0rd-not-for-logs"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def server_cert(ca: trustme.CA) -> trustme.LeafCert:
    return ca.issue_cert("localhost", "127.0.0.1")


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


async def _echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        data = await reader.read(1024)
        writer.write(data)
        await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass  # the client may abort the handshake on purpose in the failure tests
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def _echo_server(server_context: ssl.SSLContext) -> AsyncIterator[int]:
    """Run a TLS echo server on an ephemeral loopback port for the ``async with`` body."""
    server = await asyncio.start_server(_echo, "127.0.0.1", 0, ssl=server_context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), TIMEOUT)


@pytest.fixture
async def echo_port(server_cert: trustme.LeafCert) -> AsyncIterator[int]:
    """Port of a TLS echo server presenting a certificate for localhost / 127.0.0.1."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(server_context)
    async with _echo_server(server_context) as port:
        yield port


@pytest.fixture
async def mtls_echo_port(ca: trustme.CA, server_cert: trustme.LeafCert) -> AsyncIterator[int]:
    """Port of a TLS echo server that requires a client certificate issued by ``ca``."""
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(server_context)
    ca.configure_trust(server_context)
    server_context.verify_mode = ssl.CERT_REQUIRED
    async with _echo_server(server_context) as port:
        yield port


async def _round_trip(port: int, context: ssl.SSLContext, server_hostname: str) -> str:
    """Send a line through the echo server; return the negotiated TLS version."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname=server_hostname),
        TIMEOUT,
    )
    try:
        writer.write(b"ping\n")
        assert await asyncio.wait_for(reader.readline(), TIMEOUT) == b"ping\n"
        version = writer.get_extra_info("ssl_object").version()
        assert isinstance(version, str)
        return version
    finally:
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), TIMEOUT)


def test_defaults_are_strict() -> None:
    context = create_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


async def test_connects_with_cafile(echo_port: int, ca_file: str) -> None:
    version = await _round_trip(echo_port, create_ssl_context(cafile=ca_file), "localhost")
    assert version in ("TLSv1.2", "TLSv1.3")


async def test_tls_1_2_server_is_accepted(server_cert: trustme.LeafCert, ca_file: str) -> None:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.maximum_version = ssl.TLSVersion.TLSv1_2
    server_cert.configure_cert(server_context)
    async with _echo_server(server_context) as port:
        version = await _round_trip(port, create_ssl_context(cafile=ca_file), "localhost")
        assert version == "TLSv1.2"


async def test_connects_with_cadata_and_ip_address(echo_port: int, ca: trustme.CA) -> None:
    context = create_ssl_context(cadata=ca.cert_pem.bytes().decode("ascii"))
    await _round_trip(echo_port, context, "127.0.0.1")


async def test_wrong_ca_fails(echo_port: int, tmp_path: Path) -> None:
    other_ca_file = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca_file))
    context = create_ssl_context(cafile=str(other_ca_file))
    with pytest.raises(ssl.SSLCertVerificationError):
        await _round_trip(echo_port, context, "localhost")


async def test_system_store_does_not_trust_test_ca(echo_port: int) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        await _round_trip(echo_port, create_ssl_context(), "localhost")


async def test_hostname_mismatch_fails(echo_port: int, ca_file: str) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match=r"(?i)hostname|match"):
        await _round_trip(echo_port, create_ssl_context(cafile=ca_file), "broker.example.com")


async def test_hostname_check_can_be_disabled(echo_port: int, ca_file: str) -> None:
    context = create_ssl_context(cafile=ca_file, check_hostname=False)
    assert context.verify_mode == ssl.CERT_REQUIRED
    await _round_trip(echo_port, context, "broker.example.com")


async def test_verify_false_accepts_unknown_ca(echo_port: int) -> None:
    context = create_ssl_context(verify=False)
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname
    await _round_trip(echo_port, context, "broker.example.com")


def _write_encrypted_client_cert(ca: trustme.CA, directory: Path) -> tuple[str, str]:
    client_cert = ca.issue_cert("client@example.com")
    key = serialization.load_pem_private_key(client_cert.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
    )
    certfile, keyfile = directory / "client.pem", directory / "client.key"
    certfile.write_bytes(b"".join(blob.bytes() for blob in client_cert.cert_chain_pems))
    keyfile.write_bytes(encrypted)
    return str(certfile), str(keyfile)


async def test_mutual_tls_with_encrypted_key(
    mtls_echo_port: int, ca: trustme.CA, ca_file: str, tmp_path: Path
) -> None:
    certfile, keyfile = _write_encrypted_client_cert(ca, tmp_path)
    context = create_ssl_context(
        cafile=ca_file, certfile=certfile, keyfile=keyfile, password=KEY_PASSWORD
    )
    await _round_trip(mtls_echo_port, context, "localhost")


def test_wrong_key_password_is_config_error_without_password(
    ca: trustme.CA, ca_file: str, tmp_path: Path
) -> None:
    certfile, keyfile = _write_encrypted_client_cert(ca, tmp_path)
    wrong = "wrong-" + KEY_PASSWORD
    with pytest.raises(ConfigError) as excinfo:
        create_ssl_context(cafile=ca_file, certfile=certfile, keyfile=keyfile, password=wrong)
    text = str(excinfo.value) + repr(excinfo.value)
    assert "client.pem" in text
    assert wrong not in text and KEY_PASSWORD not in text
    assert excinfo.value.__cause__ is None and excinfo.value.__suppress_context__


def test_missing_cafile_is_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(ConfigError, match=r"nope\.pem"):
        create_ssl_context(cafile=str(missing))


def test_keyfile_without_certfile_is_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="certfile"):
        create_ssl_context(keyfile=str(tmp_path / "client.key"))
