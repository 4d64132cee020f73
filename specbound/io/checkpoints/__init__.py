"""Checkpoints on disk, on the Hugging Face Hub and in memory: the only package that touches torch,
safetensors or huggingface_hub, each imported lazily so that a cached analysis never loads them.

In the order of a user's request:

* :mod:`.hub` turns a :class:`~specbound.io.models.ModelRef` into a local directory (:func:`fetch`),
  downloading from the Hub only what the analysis reads, after sizing it against the cap;
* :mod:`.checkpoint` opens that directory (:func:`open_checkpoint`) or a model in memory and yields
  each layer's weights as float64 arrays in canonical (out, in) form, one layer at a time;
* :mod:`.tensors` reads the tensors themselves, one reader per format (safetensors, weights-only
  PyTorch pickles, a state dict), each tensor's dtype and shape known before its bytes are read.

The names below are the package's public ones; importers may also take them from the modules.
"""

from .checkpoint import (
    CONFIG_FILE,
    WEIGHT_FILES,
    Checkpoint,
    MappedMatrix,
    StreamedLayer,
    fingerprint,
    open_checkpoint,
    read_config,
    stored_shapes,
    weight_files,
)
from .hub import (
    LOCAL_DIRECTORY_ADVICE,
    DownloadPlan,
    ShardDownloads,
    download_plan,
    fetch,
    is_cached,
    offline_mode,
    repo_branches,
    start_download,
)
from .tensors import ShardArrival, TensorInfo, safetensors_header, widen

__all__ = [
    "CONFIG_FILE",
    "LOCAL_DIRECTORY_ADVICE",
    "WEIGHT_FILES",
    "Checkpoint",
    "DownloadPlan",
    "MappedMatrix",
    "ShardArrival",
    "ShardDownloads",
    "StreamedLayer",
    "TensorInfo",
    "download_plan",
    "fetch",
    "fingerprint",
    "is_cached",
    "offline_mode",
    "open_checkpoint",
    "read_config",
    "repo_branches",
    "safetensors_header",
    "start_download",
    "stored_shapes",
    "weight_files",
    "widen",
]
