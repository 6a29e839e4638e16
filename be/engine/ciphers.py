"""MySQL's and Doris's AES_ENCRYPT and AES_DECRYPT, as the engine's own functions.

The key is folded to the mode's length as MySQL folds it: byte i of the key given is XORed into
byte i mod length of a zeroed key. ECB and CBC pad with PKCS#7; CFB, CFB8, OFB and CTR are
streams and do not pad. A mode with a vector takes its first 16 bytes (a shorter one is padded
with zeros, as Doris does); ECB ignores it. A text that does not decrypt (a wrong key, a
truncated text) is NULL, as in MySQL; so is AES_DECRYPT's answer when it is not UTF-8 text
(Doris answers a VARCHAR). NULL in, NULL out.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pyarrow as pa
from cryptography.hazmat.decrepit.ciphers import modes as decrepit_modes
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

BLOCK_BYTES = 16
DEFAULT_MODE = "AES_128_ECB"
KEY_BITS = (128, 192, 256)
CIPHER_MODES: dict[str, Callable[[bytes], modes.Mode]] = {
    "ECB": lambda _: modes.ECB(),
    "CBC": modes.CBC,
    "CFB": decrepit_modes.CFB,
    "CFB128": decrepit_modes.CFB,
    "CFB8": decrepit_modes.CFB8,
    "OFB": decrepit_modes.OFB,
    "CTR": modes.CTR,
}
PADDED = frozenset(("ECB", "CBC"))
MODES = frozenset(f"AES_{bits}_{mode}" for bits in KEY_BITS for mode in CIPHER_MODES)
ENCRYPT = "quire_aes_encrypt"
DECRYPT = "quire_aes_decrypt"


def mode_name(text: str) -> str | None:
    """A mode as Doris names it (AES_128_ECB) from either spelling (MySQL's aes-128-ecb); ''
    is the default; None for one that is not a mode."""
    name = text.strip().upper().replace("-", "_") or DEFAULT_MODE
    return name if name in MODES else None


def _cipher(key: bytes, vector: bytes | None, mode: str) -> tuple[Cipher, bool]:
    _, bits, kind = mode.split("_")
    folded = bytearray(int(bits) // 8)
    for index, byte in enumerate(key):
        folded[index % len(folded)] ^= byte
    vector = (vector or b"")[:BLOCK_BYTES].ljust(BLOCK_BYTES, b"\0")
    return Cipher(algorithms.AES(bytes(folded)), CIPHER_MODES[kind](vector)), kind in PADDED


def encrypt(text: bytes, key: bytes, vector: bytes | None, mode: str) -> bytes:
    cipher, padded = _cipher(key, vector, mode)
    if padded:
        padder = padding.PKCS7(BLOCK_BYTES * 8).padder()
        text = padder.update(text) + padder.finalize()
    encryptor = cipher.encryptor()
    return encryptor.update(text) + encryptor.finalize()


def decrypt(text: bytes, key: bytes, vector: bytes | None, mode: str) -> bytes | None:
    cipher, padded = _cipher(key, vector, mode)
    if padded and (not text or len(text) % BLOCK_BYTES):
        return None
    decryptor = cipher.decryptor()
    plain = decryptor.update(text) + decryptor.finalize()
    if not padded:
        return plain
    unpadder = padding.PKCS7(BLOCK_BYTES * 8).unpadder()
    try:
        return unpadder.update(plain) + unpadder.finalize()
    except ValueError:  # not the padding of this key: a wrong key or text
        return None


def _texts(plain: bytes | None) -> str | None:
    if plain is None:
        return None
    try:
        return plain.decode()
    except UnicodeDecodeError:
        return None


def _vectorised(function: Callable, then: Callable, result: pa.DataType):
    def applied(texts: pa.Array, keys: pa.Array, vectors: pa.Array, modes: pa.Array) -> pa.Array:
        answers = []
        for text, key, vector, mode in zip(
            texts.to_pylist(),
            keys.to_pylist(),
            vectors.to_pylist(),
            modes.to_pylist(),
            strict=True,
        ):
            named = None if mode is None else mode_name(mode)
            if text is None or key is None or named is None:
                answers.append(None)
            else:
                answers.append(then(function(text, key, vector, named)))
        return pa.array(answers, result)

    return applied


def register(database: duckdb.DuckDBPyConnection) -> None:
    """AES_ENCRYPT and AES_DECRYPT as functions of database (text, key, vector, mode)."""
    blob, text = duckdb.sqltype("BLOB"), duckdb.sqltype("VARCHAR")
    database.create_function(
        ENCRYPT,
        _vectorised(encrypt, lambda answer: answer, pa.binary()),
        [blob, blob, blob, text],
        blob,
        type="arrow",
        null_handling="special",
    )
    database.create_function(
        DECRYPT,
        _vectorised(decrypt, _texts, pa.string()),
        [blob, blob, blob, text],
        text,
        type="arrow",
        null_handling="special",
    )
