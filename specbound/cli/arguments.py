"""What the command line accepts: argument types that check their value (one-line usage errors), the
parser that writes those errors, and the option groups several commands share (the bound's constants
and the cache, where the algebra runs, the workers of a batch, the reference of the centred proxies).

Example:
    >>> import argparse
    >>> parser = Parser(prog="demo")
    >>> bound_options(parser)
    >>> compute_options(parser.parse_args(["--layer-workers", "2"])).workers
    2
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ..core.defaults import DEFAULT_MODEL, INTRUDER_EPS, INTRUDER_K, L_PHI, LARGE_NORM_11, P_MAX
from ..core.limits import LIMITS
from ..core.text import echoed, quoted

if TYPE_CHECKING:
    from ..io.options import ComputeOptions
    from ..studies.parallel import Executor


def _checked(convert: Callable[[str], Any], accept: Callable[[Any], bool], requirement: str) -> Callable[[str], Any]:
    """An argparse type: ``convert`` the text, then require ``accept(value)`` (one-line errors)."""
    kind = "an integer" if convert is int else "a number"

    def parse(text: str) -> Any:
        shown = quoted(text, 40)
        if len(text) > 100:  # no useful number is this long; int() of 4,300 digits is refused anyway
            raise argparse.ArgumentTypeError(f"'{shown}' is too long for {kind}")
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{shown}' is not {kind}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{requirement}, got {shown}")
        return value

    return parse


def model_reference(text: str) -> str:
    """An argparse type for a model given as a reference (``--base``, ``--reference``): refused when
    empty or blank, as an unset shell variable gives it, rather than read as no reference at all."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the model given is empty: name a model or a directory")
    return text


_p_value = _checked(float, lambda v: 0.0 <= v <= P_MAX, f"p must lie in [0, {P_MAX:g}]")


_l_phi = _checked(
    float,
    lambda v: math.isfinite(v) and 0 < v <= LIMITS.max_l_phi,
    f"L_phi must be a positive number of at most {LIMITS.max_l_phi:g}",
)


_layer_workers = _checked(
    int, lambda v: 1 <= v <= 1024, "the number of layer workers must be an integer from 1 to 1024"
)


_download_gb = _checked(
    float, lambda v: math.isfinite(v) and 0 <= v < 1e6, "the download cap must be a number of GB from 0 to 1e6"
)


_grid_m = _checked(
    int,
    lambda v: 1 <= v <= LIMITS.max_grid_m,
    f"the grid resolution m must be an integer from 1 to {LIMITS.max_grid_m}",
)


_positive_int = _checked(int, lambda v: 1 <= v <= 1024, "the number of workers must be an integer from 1 to 1024")


_intruder_k = _checked(int, lambda v: 1 <= v <= 100_000, "the intruders' k must be an integer from 1 to 100000")


_intruder_eps = _checked(
    float, lambda v: math.isfinite(v) and 0 < v <= 1, "the intruders' eps must be a number in (0, 1]"
)


class Parser(argparse.ArgumentParser):
    """argparse with usage errors on one stderr line (SPEC §5), still exiting with status 2."""

    def error(self, message: str) -> NoReturn:
        """argparse echoes the offending values raw (``unrecognized arguments: ...``): escaped and
        shortened here, the one place every usage error passes."""
        self.exit(2, f"{self.prog}: error: {echoed(message)} (see {self.prog} --help)\n")


def debug_option() -> Parser:
    """``--debug`` accepted after the command too (``specbound analyze X --debug``)."""
    parent = Parser(add_help=False)
    parent.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an unexpected error"
    )
    return parent


def bound_options(parser: argparse.ArgumentParser, *, bound_terms: bool = True) -> None:
    """The options every analysing command shares: the constants of the proxy and the profile cache."""
    if bound_terms:
        parser.add_argument(
            "--l-phi",
            type=_l_phi,
            default=None,
            help=f"Lipschitz bound of the activation, in (0, {LIMITS.max_l_phi:g}] (default: the model's "
            f"activation's, {L_PHI} for GELU, 1 for ReLU, 1.0998 for SiLU)",
        )
        parser.add_argument(
            "--grid-m",
            type=_grid_m,
            default=None,
            help=f"grid resolution m of P_m, 1 to {LIMITS.max_grid_m} (default ceil(L + ln N) per model)",
        )
    parser.add_argument("--no-cache", action="store_true", help="recompute profiles, ignoring the profile cache")
    compute_arguments(parser)


def compute_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the linear algebra runs, how many layers at once, and the operator's download cap."""
    from ..core.backend import BACKENDS, DEFAULT_BACKEND, DEFAULT_DEVICE

    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default=DEFAULT_BACKEND,
        help=f"linear-algebra backend, float64 on either (default {DEFAULT_BACKEND}; torch can use a GPU)",
    )
    parser.add_argument(
        "--device",
        default=DEFAULT_DEVICE,
        help=f"device of the torch backend: cpu, cuda, cuda:1, ... (default {DEFAULT_DEVICE})",
    )
    parser.add_argument(
        "--layer-workers",
        type=_layer_workers,
        default=None,
        metavar="N",
        help="layers of one model analysed in parallel (default: one per core for small layers, else one "
        "with threaded BLAS)",
    )
    parser.add_argument(
        "--max-download-gb",
        type=_download_gb,
        default=None,
        metavar="GB",
        help="download cap for this command in GB (default: $SPECBOUND_MAX_DOWNLOAD_MB, else 1.5 GB)",
    )
    parser.add_argument(
        "--norm-11",
        action="store_true",
        default=LARGE_NORM_11,
        help="also the (1,1) norm of QK and V matrices too large to form whole (N > 2048), by blocks: "
        "2 N^2 d operations each, about a fifth of such a model's time; null otherwise",
    )


def parallel_options(parser: argparse.ArgumentParser) -> None:
    """--workers and --dask: where a batch command runs its analyses (:mod:`specbound.studies.parallel`)."""
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="analyse in N local worker processes (default 1: this process); the files are the same",
    )
    parser.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS",
        help="send the analyses to a running dask.distributed scheduler (e.g. tcp://10.0.0.5:8786)",
    )


def base_option(command: argparse.ArgumentParser, more: str = "") -> None:
    """``--base REF``: the reference of the centred proxies, and the base a LoRA adapter is merged into;
    with it, ``--intruder-k`` and ``--intruder-eps`` of the singular vectors' comparison (SPEC §14b), or
    ``--no-directions`` to skip that comparison (refused beside either of the two)."""
    command.add_argument(
        "--base",
        metavar="REF",
        type=model_reference,
        default=None,
        help="also the proxies centred at the reference REF (a pretrained base of the same family and "
        "dimensions, named as MODEL is): S_p of W - W0, the scales of W. A LoRA adapter "
        "directory as MODEL is merged into REF; without --base into the base its config records, looked "
        "for beside the adapter, in the working directory, then on the Hub" + more,
    )
    command.add_argument(
        "--no-directions",
        action=_SkipDirections,
        help="with a reference: skip the comparison of singular vectors (intruder dimensions and subspace "
        "overlaps, about as long again as the centred reading); the centred proxies are unchanged",
    )
    command.add_argument(
        "--intruder-k",
        action=_DirectionSetting,
        type=_intruder_k,
        default=INTRUDER_K,
        metavar="K",
        help=f"with a reference: compare the top K singular vectors of each matrix with the reference's "
        f"(intruder dimensions and subspace overlaps; default {INTRUDER_K}, peft's; capped at the rank)",
    )
    command.add_argument(
        "--intruder-eps",
        action=_DirectionSetting,
        type=_intruder_eps,
        default=INTRUDER_EPS,
        metavar="EPS",
        help=f"a top singular vector whose best |cosine| with the reference's is below EPS is an intruder "
        f"(default {INTRUDER_EPS:g}, peft's)",
    )


class _DirectionSetting(argparse.Action):
    """``--intruder-k`` / ``--intruder-eps``: stored, and refused as a usage error beside ``--no-directions``
    (which skips the comparison they set), in either order."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        if getattr(namespace, "no_directions", False):
            parser.error(f"{option} sets the comparison of singular vectors that --no-directions skips")
        setattr(namespace, self.dest, values)
        namespace.direction_setting = option


class _SkipDirections(argparse.Action):
    """``--no-directions``: a flag, refused as a usage error beside ``--intruder-k`` or ``--intruder-eps``."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        given = getattr(namespace, "direction_setting", None)
        if given:
            parser.error(f"{given} sets the comparison of singular vectors that --no-directions skips")
        setattr(namespace, self.dest, True)


def compute_options(args: argparse.Namespace) -> ComputeOptions:
    """The backend, the cores, the download cap and the (1,1) norms of the command line."""
    from ..core.backend import BackendSpec
    from ..core.limits import download_cap_bytes
    from ..io.options import ComputeOptions

    return ComputeOptions(
        backend=BackendSpec(args.backend, args.device),
        workers=args.layer_workers,
        max_download_bytes=None if args.max_download_gb is None else download_cap_bytes(args.max_download_gb),
        large_norm_11=args.norm_11,
    )


def executor_of(args: argparse.Namespace) -> Executor:
    from ..studies.parallel import Executor

    return Executor(workers=args.workers, dask=args.dask)


def model_options(parser: argparse.ArgumentParser) -> None:
    """What ``analyze`` and ``export`` share: the model (the bundled one by default), the options of
    :func:`bound_options` and ``--p``, a Schatten index every matrix is also evaluated at."""
    parser.add_argument(
        "model",
        nargs="?",
        default=DEFAULT_MODEL,
        help=f"local directory, Hub repo id, miniature alias like L4-H256, atlas model "
        f"atlas:FILE#MODEL, or '{DEFAULT_MODEL}' (the bundled model, default)",
    )
    bound_options(parser)
    parser.add_argument("--p", type=_p_value, default=None, help="also evaluate every matrix at this Schatten index")
