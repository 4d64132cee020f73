"""Where weights and profiles come from and go to: model names, checkpoints of every family, LoRA
adapters, references, the profile cache, atlases and safe files; the loader from a name to a profile.

Reads only the core below it.

The names in ``__all__`` are this layer's public surface: what a package built on specbound (the
lab beside it, ``specbound_lab``) imports, and all it may import (``tests/lab/test_public_api.py``).
"""

from __future__ import annotations

from .atlas import atlas_member, save_atlas
from .centred import directions_of
from .checkpoints.hub import fetch
from .files import DirectoryLock, DirectoryLocked, atomic_write, describe_os_error, read_json
from .loading import adapter_directory, difference_profile, load_profile, open_weights
from .models import FINETUNE_BASE, FINETUNE_FULL, FINETUNE_LORA, FINETUNE_TRIO_DIR, resolve
from .options import ComputeOptions

__all__ = [
    "FINETUNE_BASE",
    "FINETUNE_FULL",
    "FINETUNE_LORA",
    "FINETUNE_TRIO_DIR",
    "ComputeOptions",
    "DirectoryLock",
    "DirectoryLocked",
    "adapter_directory",
    "atlas_member",
    "atomic_write",
    "describe_os_error",
    "difference_profile",
    "directions_of",
    "fetch",
    "load_profile",
    "open_weights",
    "read_json",
    "resolve",
    "save_atlas",
]
