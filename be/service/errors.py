"""What the node service raises, as kinds of its own."""

from __future__ import annotations


class ServiceError(Exception):
    pass


class ServiceFormatError(ServiceError):
    """Bytes that are not a valid message of a version this build reads, or over a limit."""


class NotAuthenticated(ServiceError):
    """The other end did not prove it holds the cluster token."""


class NodeUnavailable(ServiceError):
    """The node could not be reached, or the connection broke before the answer came."""


class NodeUnreachable(NodeUnavailable):
    """No connection could be made: a request to this node was never sent."""


class NoNode(ServiceError):
    """No node of the role asked for has been added to the cluster (ALTER SYSTEM ADD BACKEND)."""


class NodeBusy(ServiceError):
    """The node or this client has as many requests in flight as it may."""


class CallAbandoned(ServiceError):
    """The caller stopped waiting for a node's replies (its query was stopped): the connection
    was closed, which stops the node's work too."""


class RemoteFailure(ServiceError):
    """The node answered with an error of a kind this client does not map to one of its own."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.text = message
