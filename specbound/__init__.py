"""specbound: spectra of trained Transformer encoders and spectrum-adaptive generalization-bound proxies.

Pure computation (no UI imports). The usual path::

    from specbound import load_profile, BoundAnalysis
    analysis = BoundAnalysis.from_profile(load_profile("minilm-l6"))
    terms = analysis.evaluate(PAssignment(default=1.0))   # or evaluate() for the optimal p*
"""

from __future__ import annotations

from ._version import __version__
from .bounds import BoundAnalysis, BoundSettings, BoundTerms, PAssignment
from .errors import SpecboundError
from .loading import compute_profile, load_profile
from .matrices import Kind, ModelShape
from .profile import MatrixId, SpectralProfile

__all__ = [
    "BoundAnalysis",
    "BoundSettings",
    "BoundTerms",
    "Kind",
    "MatrixId",
    "ModelShape",
    "PAssignment",
    "SpecboundError",
    "SpectralProfile",
    "__version__",
    "compute_profile",
    "load_profile",
]
