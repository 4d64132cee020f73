"""Exceptions with messages meant for a person: the CLI prints them as one line, the dashboard in a box."""

from __future__ import annotations


class SpecboundError(Exception):
    """Base class: anything the user can fix (a name, a file, the network), never a bug.

    Catch it to tell a user's mistake from a bug; its message says what to change, in one line.

    Examples:
        >>> try:
        ...     specbound.analyze("no-such-model")
        ... except SpecboundError as error:
        ...     print(type(error).__name__, str(error).split(" is neither")[0])
        ModelNotFoundError 'no-such-model'
    """


class ModelNotFoundError(SpecboundError):
    """The model name resolves to nothing: no such local directory, alias or Hub repository."""


class OfflineError(SpecboundError):
    """The model is not cached and the Hugging Face Hub cannot be reached."""


class CheckpointError(SpecboundError):
    """The checkpoint exists but cannot be used: missing or corrupt files, incomplete config."""


class UnsupportedModelError(CheckpointError):
    """The checkpoint is not a BERT-family encoder, or its shapes do not fit the analysis."""


class InvalidWeightsError(CheckpointError):
    """A weight matrix holds NaN or infinite values."""


class SpecboundWarning(UserWarning):
    """Something the user should know that does not stop the analysis (the CLI prints it as one line)."""
