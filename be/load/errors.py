"""What a load refuses; each kind carries the Doris status its answer shows."""

from __future__ import annotations


class LoadError(Exception):
    """A load that did not happen: nothing of it is visible."""

    status = "Fail"


class BadLoadRequest(LoadError):
    """A header, the body or the URL that the load cannot go on with."""


class TokenRefused(LoadError):
    """The redirect's token is missing, forged, expired or names another load."""


class TooManyFiltered(LoadError):
    """More rows were filtered than max_filter_ratio allows."""


class LabelAlreadyExists(LoadError):
    status = "Label Already Exists"

    def __init__(self, message: str, existing_state: str):
        super().__init__(message)
        self.existing_state = existing_state


class LoadNotFound(LoadError):
    """_stream_load_2pc names a transaction or label this backend does not hold."""
