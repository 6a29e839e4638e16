"""The object store: named, immutable objects over a pyarrow filesystem.

A local folder by default (objects under `<storage_root>/objects/`), or any URI pyarrow
understands; `s3://bucket/prefix` goes to an S3-compatible store (objects under
`bucket/prefix/objects/`) with the endpoint, region and keys of `S3Options`. A write is atomic
and never replaces an object: locally a temporary file, fsync, then a hard link to the name (which
fails if the name exists) and an fsync of the folder; on S3 one PUT, visible only once complete.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from be.storage.errors import (
    ObjectExists,
    ObjectNotFound,
    ObjectStoreError,
    ObjectTooLarge,
    StoreUnavailable,
    WriteRefused,
    without_paths,
)
from be.storage.limits import StorageLimits

logger = logging.getLogger(__name__)

OBJECTS_FOLDER = "objects"
TEMPORARY_PREFIX = ".tmp-"  # a local write's file before it gets its name; listings skip it
_NAME = re.compile(r"[A-Za-z0-9_=-][A-Za-z0-9_.=-]*(/[A-Za-z0-9_=-][A-Za-z0-9_.=-]*)*")
_REFUSALS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}


@dataclass(frozen=True)
class S3Options:
    """How to reach an S3-compatible store. Empty keys: the AWS default chain (the environment's
    AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, then ~/.aws); the keys never show in a repr or log."""

    endpoint: str = ""  # "" for AWS; "http://host:port" or "https://host" for another store
    region: str = ""
    access_key: str = field(default="", repr=False)
    secret_key: str = field(default="", repr=False)
    connect_timeout_ms: int = 5_000
    request_timeout_ms: int = 30_000
    max_attempts: int = 3  # pyarrow's standard retry strategy, per request
    allow_bucket_creation: bool = False

    def __post_init__(self) -> None:
        assert self.connect_timeout_ms > 0 and self.request_timeout_ms > 0, self
        assert self.max_attempts > 0, self
        assert bool(self.access_key) == bool(self.secret_key), "both S3 keys or neither"

    @classmethod
    def from_config(cls, config) -> S3Options:
        return cls(
            endpoint=config["s3_endpoint"],
            region=config["s3_region"],
            access_key=config["s3_access_key"],
            secret_key=config["s3_secret_key"],
            connect_timeout_ms=config["s3_connect_timeout_ms"],
            request_timeout_ms=config["s3_request_timeout_ms"],
            max_attempts=config["s3_max_attempts"],
        )

    def filesystem(self) -> pafs.S3FileSystem:
        arguments: dict[str, object] = {
            "connect_timeout": self.connect_timeout_ms / 1000,
            "request_timeout": self.request_timeout_ms / 1000,
            "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=self.max_attempts),
            "allow_bucket_creation": self.allow_bucket_creation,
            "allow_bucket_deletion": False,
        }
        if self.endpoint:
            endpoint = urlsplit(
                self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}"
            )
            if endpoint.scheme not in ("http", "https") or not endpoint.netloc:
                raise ObjectStoreError(
                    f"s3_endpoint must be http(s)://host[:port], not {self.endpoint!r}"
                )
            arguments.update(endpoint_override=endpoint.netloc, scheme=endpoint.scheme)
        if self.region:
            arguments["region"] = self.region
        if self.access_key:
            arguments.update(access_key=self.access_key, secret_key=self.secret_key)
        return pafs.S3FileSystem(**arguments)


DEFAULT_S3 = S3Options()
DEFAULT_LIMITS = StorageLimits()


class ObjectStore:
    """Objects by name (relative, `/`-separated) under one folder of a pyarrow filesystem."""

    def __init__(
        self,
        filesystem: pafs.FileSystem,
        base: str,
        *,
        location: str,
        limits: StorageLimits = DEFAULT_LIMITS,
        local: bool = False,
    ):
        assert base and not base.endswith("/"), base
        self.filesystem = filesystem
        self.base = base
        self.location = location  # what logs and errors show: no credentials in it
        self.limits = limits
        self.local = local

    @classmethod
    def open_root(
        cls,
        storage_root: str,
        *,
        s3: S3Options = DEFAULT_S3,
        limits: StorageLimits = DEFAULT_LIMITS,
    ) -> ObjectStore:
        """The store under a storage_root: a folder, `file://...`, `s3://bucket/prefix` or another
        pyarrow filesystem URI. Nothing is created until the first write."""
        if "://" not in storage_root or storage_root.startswith("file://"):
            folder = Path(storage_root.removeprefix("file://")).resolve() / OBJECTS_FOLDER
            return cls(
                pafs.LocalFileSystem(), str(folder), location=str(folder), limits=limits, local=True
            )
        uri = urlsplit(storage_root)
        if "@" in uri.netloc or uri.query:
            raise ObjectStoreError(
                "storage_root takes no credentials or options: use the s3_* keys or the environment"
            )
        if uri.scheme == "s3":
            base = f"{uri.netloc}/{uri.path.strip('/')}".rstrip("/") + f"/{OBJECTS_FOLDER}"
            return cls(s3.filesystem(), base, location=f"s3://{base}", limits=limits)
        try:
            filesystem, path = pafs.FileSystem.from_uri(storage_root)
        except (pa.ArrowInvalid, OSError) as error:
            raise ObjectStoreError(f"cannot open storage_root {storage_root}: {error}") from None
        base = f"{path.rstrip('/')}/{OBJECTS_FOLDER}"
        return cls(filesystem, base, location=f"{uri.scheme}://{base}", limits=limits)

    @classmethod
    def from_config(cls, config) -> ObjectStore:
        return cls.open_root(
            config["storage_root"],
            s3=S3Options.from_config(config),
            limits=StorageLimits.from_config(config),
        )

    def __repr__(self) -> str:
        return f"ObjectStore({self.location})"

    def put(self, name: str, data: bytes | pa.Buffer) -> int:
        """Write a new object atomically; its size. ObjectExists if the name is taken."""
        path = self._path(name)
        size = len(data) if isinstance(data, bytes) else data.size
        if size > self.limits.max_object_bytes:
            raise ObjectTooLarge(
                f"{size} bytes, over max_object_bytes {self.limits.max_object_bytes}", name
            )
        if self.local:
            self._put_local(name, Path(path), data)
        else:
            self._put_remote(name, path, data)
        logger.debug("wrote %s (%d bytes) to %s", name, size, self.location)
        return size

    def open(self, name: str) -> pa.NativeFile:
        """The object for random-access reading (close it, or use it in a with block)."""
        path = self._path(name)
        try:
            return self.filesystem.open_input_file(path)
        except FileNotFoundError:
            raise ObjectNotFound("no such object", name) from None
        except OSError as error:
            if self._missing(path):
                raise ObjectNotFound("no such object", name) from None
            raise self._failure(error, name, "read") from None

    def read(self, name: str) -> pa.Buffer:
        """The whole object (at most max_object_bytes)."""
        with self.open(name) as file:
            size = file.size()
            if size > self.limits.max_object_bytes:
                raise ObjectTooLarge(f"{size} bytes, over max_object_bytes", name)
            try:
                return file.read_buffer(size)
            except OSError as error:
                raise self._failure(error, name, "read") from None

    def size(self, name: str) -> int:
        info = self._info(name)
        if info.type == pafs.FileType.NotFound:
            raise ObjectNotFound("no such object", name)
        return info.size

    def exists(self, name: str) -> bool:
        return self._info(name).type != pafs.FileType.NotFound

    def delete(self, name: str, *, missing_ok: bool = False) -> None:
        path = self._path(name)
        try:
            self.filesystem.delete_file(path)
        except FileNotFoundError:
            if not missing_ok:
                raise ObjectNotFound("no such object", name) from None
        except OSError as error:
            if self._missing(path):
                if not missing_ok:
                    raise ObjectNotFound("no such object", name) from None
                return
            raise self._failure(error, name, "delete") from None
        logger.debug("deleted %s from %s", name, self.location)

    def list(self, prefix: str = "") -> list[str]:
        """The names under a folder prefix ("" or ending in "/"), sorted; at most max_list_objects."""
        if prefix and not prefix.endswith("/"):
            raise ObjectStoreError(f"a listing prefix is a folder ending in '/', not {prefix!r}")
        folder = self._path(prefix.rstrip("/")) if prefix else self.base
        selector = pafs.FileSelector(folder, recursive=True, allow_not_found=True)
        try:
            infos = self.filesystem.get_file_info(selector)
        except OSError as error:
            raise self._failure(error, prefix, "list") from None
        start = len(self.base) + 1
        names = sorted(
            info.path[start:]
            for info in infos
            if info.type == pafs.FileType.File and not info.base_name.startswith(".")
        )
        if len(names) > self.limits.max_list_objects:
            raise ObjectStoreError(
                f"{len(names)} objects under {prefix!r}, over max_list_objects "
                f"{self.limits.max_list_objects}"
            )
        return names

    def remove_temporaries(self) -> int:
        """Remove the temporary files of local writes a crash interrupted (call it at start-up,
        before any write); how many there were."""
        if not self.local:
            return 0
        removed = 0
        for folder, _, files in os.walk(self.base):
            for file in files:
                if file.startswith(TEMPORARY_PREFIX):
                    os.unlink(os.path.join(folder, file))
                    removed += 1
        if removed:
            logger.warning("removed %d unfinished writes from %s", removed, self.location)
        return removed

    def local_path(self, name: str) -> str:
        """Where a local store keeps an object (only a local store has one)."""
        assert self.local, self.location
        return self._path(name)

    def _path(self, name: str) -> str:
        if len(name) > 1024 or not _NAME.fullmatch(name) or "/../" in f"/{name}/":
            raise ObjectStoreError(f"not a valid object name: {name!r:.80}")
        return f"{self.base}/{name}"

    def _info(self, name: str) -> pafs.FileInfo:
        try:
            return self.filesystem.get_file_info(self._path(name))
        except OSError as error:
            raise self._failure(error, name, "stat") from None

    def _missing(self, path: str) -> bool:
        try:
            return self.filesystem.get_file_info(path).type == pafs.FileType.NotFound
        except OSError:
            return False

    def _put_local(self, name: str, path: Path, data: bytes | pa.Buffer) -> None:
        temporary = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=TEMPORARY_PREFIX)
            with os.fdopen(descriptor, "wb") as file:
                file.write(memoryview(data))
                file.flush()
                os.fsync(file.fileno())
            os.link(temporary, path)
            _fsync_folder(path.parent)
        except FileExistsError:
            raise ObjectExists("an object of that name exists", name) from None
        except OSError as error:
            raise self._failure(error, name, "write") from None
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError as error:
                    logger.warning("could not remove %s: %s", temporary, error)

    def _put_remote(self, name: str, path: str, data: bytes | pa.Buffer) -> None:
        if self.exists(name):
            raise ObjectExists("an object of that name exists", name)
        try:
            with self.filesystem.open_output_stream(path) as stream:
                stream.write(data)
        except OSError as error:
            raise self._failure(error, name, "write") from None

    def _failure(self, error: OSError, name: str, action: str) -> ObjectStoreError:
        """The store's failure as the error a client may see: what failed and the system's
        reason, never the node's folders or the store's own message (those go to the log)."""
        logger.warning("%s of %s failed in %s: %s", action, name, self.location, error)
        reason = os.strerror(error.errno) if error.errno else without_paths(str(error))
        text = f"{action} failed: {reason or type(error).__name__}"
        refused = error.errno in _REFUSALS or "ACCESS_DENIED" in str(error).upper()
        if action in ("write", "delete") and refused:
            return WriteRefused(text, name)
        return StoreUnavailable(text, name)


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
