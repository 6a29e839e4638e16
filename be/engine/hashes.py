"""Doris's hash functions, as the engine's own: MURMUR_HASH3_32, XXHASH_32 and XXHASH_64 of one
or more texts (the FE writes `f(a, b)` as `h(b, h(a, seed))`: each text hashed with the hash of
those before it as its seed, as Doris chains them). NULL in, NULL out."""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import mmh3
import pyarrow as pa
import xxhash

MURMUR3_32_SEED = 104729  # Doris's seed of MURMUR_HASH3_32's first text
UINT32 = 0xFFFFFFFF
UINT64 = 0xFFFFFFFFFFFFFFFF


def _murmur3_32(text: str, seed: int) -> int:
    return mmh3.hash(text, seed & UINT32)


def _xxhash_32(text: str, seed: int) -> int:
    value = xxhash.xxh32_intdigest(text.encode(), seed & UINT32)
    return value - (1 << 32) if value > 0x7FFFFFFF else value


def _xxhash_64(text: str, seed: int) -> int:
    value = xxhash.xxh3_64_intdigest(text.encode(), seed & UINT64)
    return value - (1 << 64) if value > 0x7FFFFFFFFFFFFFFF else value


# engine name: (Doris's name, its hash of a text and a seed, result type, first seed)
HASHES: dict[str, tuple[str, Callable[[str, int], int], pa.DataType, int]] = {
    "quire_murmur_hash3_32": ("MURMUR_HASH3_32", _murmur3_32, pa.int32(), MURMUR3_32_SEED),
    "quire_xxhash_32": ("XXHASH_32", _xxhash_32, pa.int32(), 0),
    "quire_xxhash_64": ("XXHASH_64", _xxhash_64, pa.int64(), 0),
}
ENGINE_NAMES = {doris: engine for engine, (doris, *_) in HASHES.items()}
FIRST_SEEDS = {doris: seed for doris, _, _, seed in HASHES.values()}


def _vectorised(hash_of: Callable[[str, int], int], result: pa.DataType):
    def hashes(texts: pa.Array, seeds: pa.Array) -> pa.Array:
        return pa.array(
            [
                None if text is None or seed is None else hash_of(text, seed)
                for text, seed in zip(texts.to_pylist(), seeds.to_pylist(), strict=True)
            ],
            result,
        )

    return hashes


def register(database: duckdb.DuckDBPyConnection) -> None:
    """The hash functions as functions of database (and of its cursors)."""
    text, seed = duckdb.sqltype("VARCHAR"), duckdb.sqltype("BIGINT")
    for name, (_, hash_of, result, _) in HASHES.items():
        returned = duckdb.sqltype("INTEGER" if result == pa.int32() else "BIGINT")
        database.create_function(
            name, _vectorised(hash_of, result), [text, seed], returned, type="arrow"
        )
