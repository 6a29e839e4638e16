"""Asking one other FE to act on what only it holds: KILL of a connection it owns, a change of its
configuration (ADMIN SET ALL FRONTENDS CONFIG). Sent over HTTP with the cluster token; its refusal
comes back as the MySQL error it would have answered."""

from __future__ import annotations

import asyncio

import requests

from fe.cluster.frontend_messages import Message, MessageError, PeerAnswer
from fe.mysql.errors import QueryError
from metadata.records import Frontend

KILL_PATH = "/api/kill"
CONFIG_PATH = "/api/set_config"


async def ask_frontend(
    frontend: Frontend, path: str, token: str, message: Message, timeout: float
) -> None:
    """Post message to frontend's path; raise its refusal as this FE's QueryError."""
    url = f"http://{frontend.host}:{frontend.http_port}{path}"

    def post() -> PeerAnswer:
        response = requests.post(
            url, json=message.to_json(), headers={"X-Quire-Token": token}, timeout=timeout
        )
        response.raise_for_status()
        return PeerAnswer.from_bytes(response.content)

    try:
        answer = await asyncio.to_thread(post)
    except (requests.RequestException, MessageError) as error:
        raise QueryError(1105, f"Could not reach frontend {frontend.name}: {error}") from None
    if answer.code:
        raise QueryError(answer.code, answer.message)
