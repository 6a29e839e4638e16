"""The MySQL port's TLS certificate: the operator's files, or a self-signed one made at first start.

The self-signed certificate names this node's host (and localhost / 127.0.0.1), lives ten years and
is kept in meta_dir/tls with the key readable by the owner only.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

logger = logging.getLogger(__name__)

CERT_FILE = "server.crt"
KEY_FILE = "server.key"
VALID_DAYS = 3650


class CertificateError(Exception):
    pass


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as error:
        raise CertificateError(f"cannot load TLS certificate {cert_file}: {error}") from None
    return context


def self_signed(directory: Path, host: str) -> tuple[Path, Path]:
    """The certificate and key in directory, made now if they are not there yet."""
    cert_file, key_file = directory / CERT_FILE, directory / KEY_FILE
    if cert_file.exists() and key_file.exists():
        return cert_file, key_file
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Quire FE {host}")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(_names(host)), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    _write_private(key_file, key_bytes, mode=0o600)
    _write_private(cert_file, certificate.public_bytes(serialization.Encoding.PEM), mode=0o644)
    logger.info("made a self-signed TLS certificate for the MySQL port: %s", cert_file)
    return cert_file, key_file


def _names(host: str) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            names.append(x509.DNSName(host))
    else:
        if address != ipaddress.ip_address("127.0.0.1"):
            names.append(x509.IPAddress(address))
    return names


def _write_private(path: Path, data: bytes, mode: int) -> None:
    partial = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)
