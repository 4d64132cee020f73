"""specbound: spectra of trained Transformers and spectrum-adaptive generalization-bound proxies.

Pure computation (no UI imports). From a notebook, one call::

    import specbound
    result = specbound.analyze("minilm-l6")          # a name, a directory, a Hub id, or a model in memory
    result.ours, result.edelman                      # the two proxies at p*
    result.to_frame()                                # one row per matrix
    result.at(p=1.0).at_p                            # the same spectra at p = 1

The layers underneath::

    from specbound import BoundAnalysis, PAssignment, load_profile
    analysis = BoundAnalysis.from_profile(load_profile("minilm-l6"))
    terms = analysis.evaluate(PAssignment(default=1.0))   # or evaluate() for the optimal p*
"""

from __future__ import annotations

from ._version import __version__
from .api.analysis import Analysis, analyze
from .core.architecture import Adaptation, Kind, Mlp, ModelShape, Residual
from .core.bounds import BoundAnalysis, BoundSettings, BoundTerms, PAssignment
from .core.engine import compute_profile
from .core.errors import SpecboundError
from .core.profile import MatrixId, SpectralProfile
from .io.loading import load_profile

__all__ = [
    "Adaptation",
    "Analysis",
    "BoundAnalysis",
    "BoundSettings",
    "BoundTerms",
    "Kind",
    "MatrixId",
    "Mlp",
    "ModelShape",
    "PAssignment",
    "Residual",
    "SpecboundError",
    "SpectralProfile",
    "__version__",
    "analyze",
    "compute_profile",
    "load_profile",
]
