"""The numbers: shapes, limits, linear algebra, spectra, profiles and the bound's terms.

Nothing here reads a file, touches the network or draws: a layer's weights go in, singular values,
norms and the proxies come out. The lowest layer of the package; it imports nothing above it
(``tests/test_layers.py`` holds every layer to that).

The names in ``__all__`` are this layer's public surface: what a package built on specbound (the
lab beside it, ``specbound_lab``) imports, and all it may import (``tests/lab/test_public_api.py``).
"""

from __future__ import annotations

from .backend import BackendSpec
from .bounds import BoundAnalysis, BoundSettings, BoundTerms, PAssignment
from .defaults import FIXED_P
from .directions import Directions, DirectionSettings
from .errors import SpecboundError
from .heavy_tail import SpectrumAlphas, spectrum_alphas
from .limits import LIMITS, MEGABYTE, format_megabytes
from .logspace import LOG10_E
from .profile import MatrixId, SpectralProfile
from .progress import ProgressCallback, ProgressEvent, silent
from .proxies import FIXED_P_PROXIES, PROXIES, Proxy
from .text import quoted
from .threads import torch_threads
from .values import check_number, is_genuine_int, is_real_number

__all__ = [
    "FIXED_P",
    "FIXED_P_PROXIES",
    "LIMITS",
    "LOG10_E",
    "MEGABYTE",
    "PROXIES",
    "BackendSpec",
    "BoundAnalysis",
    "BoundSettings",
    "BoundTerms",
    "DirectionSettings",
    "Directions",
    "MatrixId",
    "PAssignment",
    "ProgressCallback",
    "ProgressEvent",
    "Proxy",
    "SpecboundError",
    "SpectralProfile",
    "SpectrumAlphas",
    "check_number",
    "format_megabytes",
    "is_genuine_int",
    "is_real_number",
    "quoted",
    "silent",
    "spectrum_alphas",
    "torch_threads",
]
