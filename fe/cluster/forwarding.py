"""Statements a non-leader cannot run itself (fe.statement_kinds says which) go to the leader over
HTTP with the session's context (user, current database, changed session variables). The leader
runs them as that user and answers with its journal id; the non-leader answers its client only once
it has replayed that far, so a session reads its own writes on any FE (the seed's read-your-write
rule).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time

import requests
from urllib3.exceptions import NewConnectionError

from be.config import Config
from be.load.auto_partitions import AUTO_PARTITIONS_PATH
from fe.cluster.frontend_messages import ForwardAnswer, ForwardOutcome, ForwardRequest, MessageError
from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from metadata.catalog import Catalog
from metadata.journal.replicated import ReplicatedJournal

logger = logging.getLogger(__name__)

FORWARD_PATH = "/api/forward"
REPLAY_POLL_SECONDS = 0.005
FAILOVER_SECONDS = 3.0  # how long a forward keeps looking for a (new) leader: one failover
LEADER_RETRY_SECONDS = 0.1
MAX_LEADER_CONNECTIONS = 32  # kept open to the leader, for forwards running at once


class Forwarder:
    def __init__(self, journal: ReplicatedJournal, catalog: Catalog, token: str, config: Config):
        self.journal = journal
        self.catalog = catalog
        self.token = token
        self.config = config
        self._http = requests.Session()  # keeps connections to the leader open between forwards
        adapter = requests.adapters.HTTPAdapter(
            pool_connections=4, pool_maxsize=MAX_LEADER_CONNECTIONS
        )
        self._http.mount("http://", adapter)

    def leader_url(self) -> str:
        leader = self.journal.status().leader
        if leader is None:
            raise QueryError(
                1105,
                "No leader FE: a majority of followers is unreachable; writes are refused until it is back",
            )
        host, _, port = str(leader).rpartition(":")
        for frontend in list(self.catalog.frontends.values()):
            if frontend.host == host and str(frontend.edit_log_port) == port:
                return f"http://{frontend.host}:{frontend.http_port}"
        raise QueryError(1105, f"The leader {leader} is not in this FE's catalog yet; retry")

    async def forward(self, session, sql: str) -> Result:
        request = ForwardRequest(
            secrets.token_hex(16),
            sql,
            session.username,
            session.user_host,
            session.database,
            session.changed_variables(),
        )
        timeout = self.config["journal_commit_timeout_second"]
        answer = await self._answer(request, timeout)
        if answer.outcome == ForwardOutcome.REFUSED:
            raise QueryError(answer.code, answer.message, answer.sqlstate)
        await self.wait_replayed(answer.journal_id, timeout)
        return Result(affected_rows=answer.affected_rows, info=answer.info)

    async def _answer(self, request: ForwardRequest, timeout: float) -> ForwardAnswer:
        """The leader's answer. While no leader is known, or the one asked died or stepped down
        before answering, ask again (the new leader) for FAILOVER_SECONDS. The request's id
        goes into the statement's journal entry, so a statement sent twice takes effect once and
        the second answer tells how the first went."""
        deadline = time.monotonic() + FAILOVER_SECONDS
        maybe_delivered = False
        while True:
            try:
                url = self.leader_url() + FORWARD_PATH
                response = await asyncio.to_thread(
                    self._http.post,
                    url,
                    json=request.to_json(),
                    headers={"X-Quire-Token": self.token},
                    timeout=timeout,
                )
                answer = _answer_of(response)
                if answer.outcome != ForwardOutcome.NOT_LEADER:
                    return answer
                failure = answer.message
            except QueryError as error:  # no leader known yet
                failure = error.message
            except requests.Timeout:
                raise _unknown_outcome(f"the leader did not answer within {timeout} s") from None
            except requests.RequestException as error:
                maybe_delivered = maybe_delivered or _may_have_arrived(error)
                failure = f"Could not reach the leader: {error}"
            if time.monotonic() > deadline:
                if maybe_delivered:
                    raise _unknown_outcome("the leader went away before answering")
                raise QueryError(1105, failure)
            await asyncio.sleep(LEADER_RETRY_SECONDS)

    async def auto_partitions(self, table_id: int, values: list[list]) -> None:
        """The leader makes the auto partitions of table_id that values (partition column values
        of rows) need; returns once this FE has replayed them (QueryError as the leader
        refused)."""
        timeout = self.config["journal_commit_timeout_second"]
        try:
            response = await asyncio.to_thread(
                self._http.post,
                self.leader_url() + AUTO_PARTITIONS_PATH,
                json={"table_id": table_id, "values": values},
                headers={"X-Quire-Token": self.token},
                timeout=timeout,
            )
            answer = response.json()
        except (requests.RequestException, ValueError) as error:
            raise QueryError(1105, f"The leader made no auto partitions: {error}") from None
        if response.status_code != 200 or "journal_id" not in answer:
            raise QueryError(answer.get("code", 1105), answer.get("msg", "no auto partitions"))
        await self.wait_replayed(int(answer["journal_id"]), timeout)

    async def wait_replayed(self, journal_id: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.catalog.journal_id < journal_id:
            if time.monotonic() > deadline:
                raise QueryError(
                    1105,
                    f"The statement committed (journal id {journal_id}) but this FE has replayed only "
                    f"{self.catalog.journal_id} after {timeout} s",
                )
            await asyncio.sleep(REPLAY_POLL_SECONDS)


def _answer_of(response: requests.Response) -> ForwardAnswer:
    if response.status_code != 200:
        raise QueryError(1105, f"The leader refused the statement: HTTP {response.status_code}")
    try:
        return ForwardAnswer.from_bytes(response.content)
    except MessageError as error:
        raise QueryError(1105, f"The leader's answer could not be read: {error}") from None


def _may_have_arrived(error: requests.RequestException) -> bool:
    """False only when no connection to the leader was made: then nothing was sent."""
    if isinstance(error, requests.ConnectTimeout):
        return False
    reason = getattr(error.args[0] if error.args else None, "reason", None)
    return not isinstance(reason, NewConnectionError)


def _unknown_outcome(why: str) -> QueryError:
    return QueryError(
        1105, f"The statement may or may not have taken effect: {why}; check before retrying it"
    )
