"""Domain errors: every failure a user can see is one of these, with a message fit to show."""

from __future__ import annotations


class MemtroveError(Exception):
    """Base of every error memtrove reports to a caller."""

    kind = "error"
    field: str | None = None  # the argument the error is about, where one is (always, for bad input)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(MemtroveError):
    """Bad input: names the field and the limit; nothing was changed."""

    kind = "validation_error"

    field: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(MemtroveError):
    """The named item does not exist; ``field`` names the argument that named it, where one did."""

    kind = "not_found"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class EmbeddingError(MemtroveError):
    """The embedding provider failed (after retries where retrying makes sense)."""

    kind = "embedding_error"


class ConfigurationError(MemtroveError):
    """The configuration cannot work: a bad key, a missing setting, a mismatched store."""

    kind = "configuration_error"


class StorageError(MemtroveError):
    """A store failed to read or write."""

    kind = "storage_error"
