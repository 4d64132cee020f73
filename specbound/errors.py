"""Exceptions with messages meant for a person: the CLI prints them as one line, the dashboard in a box."""

from __future__ import annotations


class SpecboundError(Exception):
    """Base class: anything the user can fix (a name, a file, the network), never a bug."""


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
