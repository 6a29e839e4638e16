"""A Spark write's requests to an FE (be/spark/write_protocol.py), with requests: the driver
begins, commits or aborts; each task asks row ids for its batches."""

from __future__ import annotations

import json

import pyarrow as pa
import requests

from be.spark import write_protocol as protocol
from be.spark.errors import WriteRefused
from be.spark.plans import split_table
from be.storage.blocks import ObjectMeta
from be.table_schema import TableSchema


def base_url(fe: str) -> str:
    return (fe if "://" in fe else f"http://{fe}").rstrip("/")


def begin(
    fe: str, user: str, password: str, table: str, overwrite: bool, timeout: float, label: str = ""
) -> protocol.Begun:
    """A load of table ("db.t") begun under label ("": the FE names it): WriteRefused with the
    FE's message if it refuses (409 "Label Already Exists" for a label a load holds)."""
    db, name = split_table(table)
    url = base_url(fe) + protocol.BEGIN_PATH.format(db=db, table=name)
    data = _answer(
        lambda: requests.post(
            url,
            json={"overwrite": overwrite, "label": label},
            auth=(user, password),
            timeout=timeout,
        ),
        fe,
    )
    try:
        return protocol.Begun.from_json(data)
    except protocol.WriteProtocolError as error:
        raise WriteRefused(error.message, 0) from None


class LoadClient:
    """The requests that carry a begun load's token (a task's or the driver's)."""

    def __init__(self, fe: str, token: str, timeout: float):
        self.fe = fe
        self.url = base_url(fe)
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers[protocol.TOKEN_HEADER] = token

    def close(self) -> None:
        self.session.close()

    def reserve_row_ids(self, count: int) -> int:
        answer = self._post(protocol.ROW_IDS_PATH, json.dumps({"count": count}).encode())
        first = json.loads(answer).get("first")
        if type(first) is not int or first <= 0:
            raise WriteRefused(f"the FE answered row ids {first!r:.40}", 0)
        return first

    def commit(self, objects: tuple[ObjectMeta, ...]) -> int:
        answer = self._post(protocol.COMMIT_PATH, protocol.encode_commit(objects))
        commit_ts = json.loads(answer).get("commit_ts")
        if type(commit_ts) is not int or commit_ts <= 0:
            raise WriteRefused(f"the FE answered a commit with {commit_ts!r:.40}", 0)
        return commit_ts

    def auto_partitions(self, values: list[list]) -> TableSchema:
        """The table's schema once the FE made the auto partitions of these partition column
        values (WriteRefused if it did not: the table has no such rule, or too many)."""
        answer = self._post(protocol.PARTITIONS_PATH, json.dumps({"values": values}).encode())
        try:
            return TableSchema.from_fields(json.loads(answer)["schema"])
        except (ValueError, KeyError, TypeError, pa.ArrowException):
            raise WriteRefused("the FE answered auto partitions without a schema", 0) from None

    def abort(self, names: tuple[str, ...]) -> None:
        self._post(protocol.ABORT_PATH, protocol.encode_abort(names))

    def _post(self, path: str, body: bytes) -> bytes:
        return _answer(
            lambda: self.session.post(self.url + path, data=body, timeout=self.timeout), self.fe
        )


def _answer(send, fe: str) -> bytes:
    try:
        response = send()
    except requests.RequestException as error:
        raise WriteRefused(f"the FE at {fe} did not answer: {error}", 0) from None
    with response:
        if response.status_code != 200:
            try:
                message = response.json().get("msg", response.reason)
            except ValueError:
                message = response.reason
            raise WriteRefused(f"{response.status_code}: {message}", response.status_code)
        if len(response.content) > protocol.MAX_JSON_BYTES:
            raise WriteRefused("the FE's answer is too large", 0)
        return response.content
