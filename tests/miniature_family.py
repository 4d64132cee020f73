"""A miniature-shaped family for the Scaling and Theory page tests, as an atlas file.

Real tiny BERT checkpoints (random weights, written with ``save_pretrained``) of depths 1, 2, 3 and
widths 16, 32 with 2 heads, analysed by specbound and exported with ``save_atlas``. Each profile is
named like a miniature alias, ``L{layers}-H{width}``: that is how the Scaling page recognises the
family, and it reads (L, N) from the profile's shape.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tiny_models import MakeCheckpoint

from specbound.core.profile import SpectralProfile
from specbound.io.atlas import save_atlas
from specbound.io.loading import load_profile

LAYERS = (1, 2, 3)
WIDTHS = (16, 32)
HEADS = 2


def family_profiles(make_checkpoint: MakeCheckpoint) -> list[SpectralProfile]:
    profiles = []
    for layers in LAYERS:
        for width in WIDTHS:
            directory = make_checkpoint(
                layers=layers, hidden=width, heads=HEADS, ffn=2 * width, seed=10 * layers + width
            )
            profile = load_profile(str(directory), use_cache=False)
            profiles.append(dataclasses.replace(profile, model=f"L{layers}-H{width}"))
    return profiles


def family_atlas(make_checkpoint: MakeCheckpoint, directory: Path) -> tuple[Path, list[SpectralProfile]]:
    """(atlas path, the profiles in it) for the whole family."""
    profiles = family_profiles(make_checkpoint)
    return save_atlas(profiles, directory / "family.npz"), profiles
