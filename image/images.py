"""Image files: the whole catalog at one journal id, written without stopping writers.

An image is written as `image.ckpt` from a catalog snapshot, record by record, then fsynced and
renamed to `image.<journal_id>`. Layout:

    prefix   magic "QUIREIMG", format version (u32), header length (u32)        big-endian
    header   msgpack map: journal_id, raft_index, next_id, last_timestamp_ms, codec_version,
             counts (records per section)
    body     msgpack records (metadata.codec encoding), section after section, in SECTIONS order
    trailer  magic "QUIREEND", body length (u64), crc32 of prefix + header + body (u32)
"""

from __future__ import annotations

import logging
import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgpack

from metadata import codec
from metadata.catalog import Catalog, CatalogSnapshot
from metadata.records import (
    AlterJob,
    Backend,
    Database,
    Frontend,
    LabelledJobRecord,
    RecycledObject,
    RequestOutcome,
    Role,
    Table,
    TableStats,
    User,
)

logger = logging.getLogger(__name__)

MAGIC = b"QUIREIMG"
TRAILER_MAGIC = b"QUIREEND"
FORMAT_VERSION = 1
CHECKPOINT_NAME = "image.ckpt"

_PREFIX = struct.Struct(">8sII")
_TRAILER = struct.Struct(">8sQI")
_IMAGE_NAME = re.compile(r"image\.(\d+)")

MAX_HEADER_BYTES = 1024 * 1024
MAX_RECORD_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024
PROGRESS_INTERVAL_SECONDS = 2.0

# (section name, record type); global variables are (name, value) pairs, not records.
SECTIONS: tuple[tuple[str, type | None], ...] = (
    ("databases", Database),
    ("tables", Table),
    ("users", User),
    ("frontends", Frontend),
    ("backends", Backend),
    ("global_variables", None),
    ("requests", RequestOutcome),  # since codec version 3
    ("recycle_bin", RecycledObject),  # since the recycle bin (older images: none)
    ("alter_jobs", AlterJob),  # since ALTER jobs (older images: none)
    ("roles", Role),  # since codec version 6 (older images: none)
    ("table_stats", TableStats),  # since codec version 7 (older images: none)
    ("labelled_jobs", LabelledJobRecord),  # since codec version 8 (older images: none)
)
_HEADER_COUNTERS = ("journal_id", "raft_index", "next_id", "last_timestamp_ms")


class ImageError(Exception):
    """An image that cannot be used: missing, truncated, corrupt or of an unknown format."""


@dataclass(frozen=True)
class ImageInfo:
    journal_id: int
    path: Path
    size: int
    raft_index: int = -1  # the last journal entry the image covers; -1 if its header is unreadable


class ImageStore:
    """The image directory: writes images, lists them, loads the newest good one."""

    def __init__(self, image_dir: str | Path, keep: int = 3):
        assert keep >= 1, "at least one image must be kept"
        self.image_dir = Path(image_dir)
        self.keep = keep
        self._write_lock = threading.Lock()

    def path_for(self, journal_id: int) -> Path:
        assert journal_id >= 0
        return self.image_dir / f"image.{journal_id}"

    def images(self) -> list[ImageInfo]:
        """The images in the directory, newest first."""
        if not self.image_dir.is_dir():
            return []
        found = []
        for entry in os.scandir(self.image_dir):
            match = _IMAGE_NAME.fullmatch(entry.name)
            if match and entry.is_file():
                path = Path(entry.path)
                found.append(
                    ImageInfo(int(match.group(1)), path, entry.stat().st_size, _raft_index(path))
                )
        return sorted(found, key=lambda info: info.journal_id, reverse=True)

    def write(self, snapshot: CatalogSnapshot) -> ImageInfo:
        with self._write_lock:
            self.image_dir.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            checkpoint = self.image_dir / CHECKPOINT_NAME
            with open(checkpoint, "wb") as file:
                _write_image(file, snapshot)
                file.flush()
                os.fsync(file.fileno())
            final = self.path_for(snapshot.journal_id)
            os.replace(checkpoint, final)
            _fsync_dir(self.image_dir)
            info = ImageInfo(snapshot.journal_id, final, final.stat().st_size, snapshot.raft_index)
            logger.info(
                "wrote image %s (%d bytes, %d tables) in %.2f s",
                final,
                info.size,
                len(snapshot.tables),
                time.monotonic() - started,
            )
            self._delete_old_images()
            return info

    def load_newest(self) -> tuple[Catalog, ImageInfo] | None:
        """The catalog of the newest good image; None if there is no image at all. A bad image is
        logged and skipped for the next older one; ImageError if every image is bad."""
        images = self.images()
        if not images:
            return None
        failures = []
        for info in images:
            try:
                return load_image(info.path), info
            except ImageError as error:
                failures.append(f"{info.path.name}: {error}")
                logger.error(
                    "image %s is unusable (%s); falling back to the next older image",
                    info.path,
                    error,
                )
        raise ImageError(
            f"none of the {len(images)} images in {self.image_dir} is usable: "
            + "; ".join(failures)
        )

    def stream(self, journal_id: int) -> BinaryIO:
        """The image file opened for reading (the caller closes it)."""
        path = self.path_for(journal_id)
        try:
            return open(path, "rb")
        except FileNotFoundError:
            raise ImageError(f"no image {path.name} in {self.image_dir}") from None

    def prune(self) -> None:
        """Keep the newest `keep` images (after images arrived from another FE)."""
        with self._write_lock:
            self._delete_old_images()

    def _delete_old_images(self) -> None:
        for info in self.images()[self.keep :]:
            try:
                info.path.unlink()
                logger.info("deleted old image %s", info.path)
            except FileNotFoundError:
                pass


def _raft_index(path: Path) -> int:
    try:
        with _open_image(path) as file:
            header, _, _ = _read_frame(file, path)
        return int(header.fields["raft_index"])
    except (ImageError, KeyError, ValueError):
        return -1


def verify(path: str | Path) -> ImageInfo:
    """Check an image's structure and checksum without building a catalog."""
    path = Path(path)
    with _open_image(path) as file:
        header, body_length, expected_crc = _read_frame(file, path)
        crc = zlib.crc32(header.head_bytes())
        remaining = body_length
        while remaining:
            chunk = file.read(min(CHUNK_BYTES, remaining))
            if not chunk:
                raise ImageError("the file ended inside the body")
            crc = zlib.crc32(chunk, crc)
            remaining -= len(chunk)
        if crc != expected_crc:
            raise ImageError(f"checksum mismatch (stored {expected_crc:08x}, computed {crc:08x})")
        return ImageInfo(
            header.fields["journal_id"],
            path,
            os.fstat(file.fileno()).st_size,
            header.fields["raft_index"],
        )


def load_image(path: str | Path) -> Catalog:
    """The catalog stored in an image file; ImageError, naming the cause, if it is unusable."""
    path = Path(path)
    started = time.monotonic()
    with _open_image(path) as file:
        header, body_length, expected_crc = _read_frame(file, path)
        fields = header.fields
        named = _IMAGE_NAME.fullmatch(path.name)
        if named and int(named.group(1)) != fields["journal_id"]:
            raise ImageError(
                f"file name says journal id {named.group(1)}, header says {fields['journal_id']}"
            )
        counts = fields["counts"]
        logger.info(
            "loading image %s: journal id %d, %s",
            path,
            fields["journal_id"],
            ", ".join(f"{counts[name]} {name}" for name, _ in SECTIONS),
        )
        body = _BodyReader(file, body_length, header.head_bytes())
        sections = _read_sections(body.records(), counts, fields["codec_version"], path, started)
        if body.crc != expected_crc:
            raise ImageError(
                f"checksum mismatch (stored {expected_crc:08x}, computed {body.crc:08x})"
            )
    snapshot = CatalogSnapshot(
        journal_id=fields["journal_id"],
        raft_index=fields["raft_index"],
        next_id=fields["next_id"],
        last_timestamp_ms=fields["last_timestamp_ms"],
        raft_term=fields.get("raft_term", 0),
        dbs={db.id: db for db in sections["databases"]},
        tables={table.id: table for table in sections["tables"]},
        users={(user.name, user.host): user for user in sections["users"]},
        frontends={frontend.name: frontend for frontend in sections["frontends"]},
        backends={backend.id: backend for backend in sections["backends"]},
        global_variables=dict(sections["global_variables"]),
        requests={outcome.request_id: outcome for outcome in sections["requests"]},
        recycle_bin={recycled.id: recycled for recycled in sections["recycle_bin"]},
        alter_jobs={job.id: job for job in sections["alter_jobs"]},
        roles={role.name: role for role in sections["roles"]},
        table_stats={stats.table_id: stats for stats in sections["table_stats"]},
        labelled_jobs={(j.kind, j.db, j.label): j for j in sections["labelled_jobs"]},
    )
    try:
        catalog = Catalog.from_snapshot(snapshot)
    except AssertionError as error:
        raise ImageError(f"inconsistent catalog: {error}") from error
    logger.info(
        "loaded image %s: %d tables, %d tablets in %.2f s",
        path,
        len(catalog.tables),
        catalog.tablet_count(),
        time.monotonic() - started,
    )
    return catalog


# Writing.


def _write_image(file: BinaryIO, snapshot: CatalogSnapshot) -> None:
    sections = {
        "databases": snapshot.dbs.values(),
        "tables": snapshot.tables.values(),
        "users": snapshot.users.values(),
        "frontends": snapshot.frontends.values(),
        "backends": snapshot.backends.values(),
        "global_variables": snapshot.global_variables.items(),
        "requests": snapshot.requests.values(),
        "recycle_bin": snapshot.recycle_bin.values(),
        "alter_jobs": snapshot.alter_jobs.values(),
        "roles": snapshot.roles.values(),
        "table_stats": snapshot.table_stats.values(),
        "labelled_jobs": snapshot.labelled_jobs.values(),
    }
    header = msgpack.packb(
        {
            **{name: getattr(snapshot, name) for name in _HEADER_COUNTERS},
            "raft_term": snapshot.raft_term,
            "codec_version": codec.FORMAT_VERSION,
            "counts": {name: len(sections[name]) for name, _ in SECTIONS},
        }
    )
    assert len(header) <= MAX_HEADER_BYTES
    head = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header
    file.write(head)
    crc = zlib.crc32(head)
    body_length = 0
    pack = msgpack.Packer().pack
    encode = codec.encode_record
    parts: list[bytes] = []
    pending = 0
    for name, record_type in SECTIONS:
        for record in sections[name]:
            data = pack(tuple(record) if record_type is None else encode(record))
            assert len(data) <= MAX_RECORD_BYTES, f"a {name} record of {len(data)} bytes"
            parts.append(data)
            pending += len(data)
            if pending >= CHUNK_BYTES:
                chunk = b"".join(parts)
                file.write(chunk)
                crc = zlib.crc32(chunk, crc)
                body_length += len(chunk)
                parts.clear()
                pending = 0
    chunk = b"".join(parts)
    file.write(chunk)
    crc = zlib.crc32(chunk, crc)
    body_length += len(chunk)
    file.write(_TRAILER.pack(TRAILER_MAGIC, body_length, crc))


def _fsync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# Reading.


@dataclass(frozen=True)
class _Header:
    length: int
    raw: bytes
    fields: dict

    def head_bytes(self) -> bytes:
        """The prefix and header as they are on disk (the start of the checksummed bytes)."""
        return _PREFIX.pack(MAGIC, FORMAT_VERSION, self.length) + self.raw


def _open_image(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        raise ImageError(f"cannot open: {error}") from error


def _read_frame(file: BinaryIO, path: Path) -> tuple[_Header, int, int]:
    """Read and check the prefix, header and trailer; leave the file at the start of the body."""
    try:
        size = os.fstat(file.fileno()).st_size
        prefix = file.read(_PREFIX.size)
        if len(prefix) < _PREFIX.size:
            raise ImageError(f"truncated: {size} bytes is shorter than an image prefix")
        magic, version, header_length = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise ImageError(f"not an image file (magic {magic!r})")
        if version != FORMAT_VERSION:
            raise ImageError(f"unknown image format version {version}")
        if header_length > MAX_HEADER_BYTES:
            raise ImageError(f"header length {header_length} exceeds {MAX_HEADER_BYTES}")
        raw = file.read(header_length)
        body_length = size - _PREFIX.size - header_length - _TRAILER.size
        if len(raw) < header_length or body_length < 0:
            raise ImageError(f"truncated: {size} bytes cannot hold the header and trailer")
        body_start = file.tell()
        file.seek(size - _TRAILER.size)
        trailer_magic, stored_body_length, crc = _TRAILER.unpack(file.read(_TRAILER.size))
        if trailer_magic != TRAILER_MAGIC:
            raise ImageError("truncated or damaged: no trailer at the end of the file")
        if stored_body_length != body_length:
            raise ImageError(
                f"truncated or damaged: trailer says {stored_body_length} body bytes, "
                f"the file holds {body_length}"
            )
        file.seek(body_start)
    except OSError as error:
        raise ImageError(f"read failed: {error}") from error
    return _Header(header_length, raw, _parse_header(raw)), body_length, crc


def _parse_header(raw: bytes) -> dict:
    try:
        fields = msgpack.unpackb(raw, raw=False)
    except (ValueError, msgpack.UnpackException) as error:
        raise ImageError(f"damaged header: {error}") from error
    if not isinstance(fields, dict):
        raise ImageError("damaged header: not a map")
    for name in _HEADER_COUNTERS:
        if type(fields.get(name)) is not int or fields[name] < 0:
            raise ImageError(f"damaged header: bad {name} {fields.get(name)!r}")
    if fields.get("codec_version") not in codec.SUPPORTED_VERSIONS:
        raise ImageError(f"unknown record encoding version {fields.get('codec_version')!r}")
    counts = fields.get("counts")
    if isinstance(counts, dict) and "requests" not in counts:
        counts["requests"] = 0  # written before requests were kept
    if isinstance(counts, dict) and "recycle_bin" not in counts:
        counts["recycle_bin"] = 0  # written before the recycle bin
    if isinstance(counts, dict) and "alter_jobs" not in counts:
        counts["alter_jobs"] = 0  # written before ALTER jobs
    if isinstance(counts, dict) and "roles" not in counts:
        counts["roles"] = 0  # written before roles
    if isinstance(counts, dict) and "table_stats" not in counts:
        counts["table_stats"] = 0  # written before statistics
    if isinstance(counts, dict) and "labelled_jobs" not in counts:
        counts["labelled_jobs"] = 0  # written before jobs were journaled
    if not isinstance(counts, dict) or any(
        type(counts.get(name)) is not int or counts[name] < 0 for name, _ in SECTIONS
    ):
        raise ImageError(f"damaged header: bad record counts {counts!r}")
    return fields


class _BodyReader:
    """Streams the body's msgpack records while computing the checksum over what it reads."""

    def __init__(self, file: BinaryIO, body_length: int, already_read: bytes):
        self.file = file
        self.body_length = body_length
        self.crc = zlib.crc32(already_read)

    def records(self) -> Iterator[tuple]:
        unpacker = msgpack.Unpacker(
            use_list=False, raw=False, max_buffer_size=MAX_RECORD_BYTES + CHUNK_BYTES
        )
        remaining = self.body_length
        try:
            while remaining:
                chunk = self.file.read(min(CHUNK_BYTES, remaining))
                if not chunk:
                    raise ImageError("truncated: the file ended inside the body")
                remaining -= len(chunk)
                self.crc = zlib.crc32(chunk, self.crc)
                unpacker.feed(chunk)
                yield from unpacker
        except OSError as error:
            raise ImageError(f"read failed: {error}") from error
        except (ValueError, msgpack.UnpackException) as error:
            raise ImageError(f"damaged body: {error}") from error
        if unpacker.tell() != self.body_length:
            raise ImageError("damaged body: it ends inside a record")


def _read_sections(
    records: Iterator[tuple], counts: dict, codec_version: int, path: Path, started: float
) -> dict[str, list]:
    sections: dict[str, list] = {}
    total = sum(counts[name] for name, _ in SECTIONS)
    done = 0
    last_report = started
    for name, record_type in SECTIONS:
        decoded = sections[name] = []
        for _ in range(counts[name]):
            value = next(records, None)
            if value is None:
                raise ImageError(f"damaged body: fewer {name} than the {counts[name]} announced")
            try:
                if record_type is None:
                    key, item = value
                    decoded.append((str(key), str(item)))
                else:
                    decoded.append(codec.decode_record(record_type, value, codec_version))
            except (codec.CodecError, TypeError, ValueError) as error:
                raise ImageError(f"damaged {name} record: {error}") from error
            done += 1
            if done % 4096 == 0 and time.monotonic() - last_report >= PROGRESS_INTERVAL_SECONDS:
                last_report = time.monotonic()
                logger.info("loading image %s: %d of %d records", path, done, total)
    if next(records, None) is not None:
        raise ImageError("damaged body: more records than the header announces")
    return sections
