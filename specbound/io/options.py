"""How a profile is computed: where the linear algebra runs, how many layers at once, the download
cap, and whether the (1,1) norms of the largest products are computed.

One frozen value carries these from the command line (``--backend``, ``--device``,
``--layer-workers``, ``--max-download-gb``, ``--norm-11``) or :func:`specbound.analyze` to
:func:`specbound.io.loading.load_profile`, and to the worker processes of ``grid`` and
``trajectory`` (it pickles). Its defaults are the package's: numpy on the CPU
(:data:`~specbound.core.backend.DEFAULT_BACKEND`), layer workers chosen per shape
(:func:`specbound.core.engine.default_workers`), the download cap of the environment
(:func:`specbound.core.limits.max_download_bytes`), and :data:`~specbound.core.defaults.LARGE_NORM_11`.
None of them changes a number of the profile beyond rounding; they change how long it takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.backend import Backend, BackendSpec
from ..core.defaults import LARGE_NORM_11


@dataclass(frozen=True)
class ComputeOptions:
    """load_profile's backend, layer-worker, download-cap and (1,1)-norm options, in one value.

    Examples:
        >>> ComputeOptions(workers=2).backend.label
        'numpy'
    """

    #: the backend and device of the float64 linear algebra: a spec, or a backend already made (one
    #: process only: a spec is what pickles to a worker)
    backend: BackendSpec | Backend = field(default_factory=BackendSpec)
    #: layers of one model analysed in parallel (None: :func:`specbound.core.engine.default_workers`)
    workers: int | None = None
    #: the download cap in bytes (None: :func:`specbound.core.limits.max_download_bytes`)
    max_download_bytes: int | None = None
    #: also the (1,1) norms of QK and V matrices too large to form whole
    large_norm_11: bool = LARGE_NORM_11


#: The package's defaults, for a signature's default value.
DEFAULT_COMPUTE = ComputeOptions()
