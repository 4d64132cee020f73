"""``specbound grid``: a set of models (the BERT Miniatures by default, any names, an atlas's members)
analysed for the scaling study, resumable, with the measured growth beside the predicted one.

Example:
    >>> from specbound.cli import build_parser
    >>> build_parser().parse_args(["grid", "--layers", "2", "4", "--out", "grid"]).layers
    [2, 4]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..io.files import require_parent
from .arguments import Parser, bound_options, compute_options, debug_option, executor_of, parallel_options
from .terminal import progress, say


def _cmd_grid(args: argparse.Namespace) -> int:
    from ..api.batch import miniature_names, run_grid
    from ..core.bounds import BoundSettings
    from ..studies.status import Status

    given = [*(args.models or []), *_atlas_members(args.from_atlas)]
    names = miniature_names(args.layers, args.widths) if (args.layers or args.widths or not given) else []
    names += [m for m in given if m not in names]
    if args.atlas is not None:
        require_parent(Path(args.atlas), "atlas")  # before hours of analysis, not after
    result = run_grid(
        names,
        Path(args.out),
        settings=BoundSettings(l_phi=args.l_phi, grid_m=args.grid_m),
        atlas=args.atlas,
        use_cache=not args.no_cache,
        progress=lambda name: progress(),
        report=say,
        executor=executor_of(args),
        compute=compute_options(args),
    )
    done = sum(o.status is Status.DONE for o in result.outcomes)
    say(
        f"{len(result.succeeded)} of {len(result.outcomes)} models available ({done} analysed now, "
        f"{len(result.succeeded) - done} already done), {len(result.missing)} missing; wrote "
        f"{', '.join(f.name for f in result.files)} to {args.out}"
    )
    if result.missing:
        say(f"missing models are listed with how to get them in {Path(args.out) / 'missing.csv'}")
    if result.study is not None:
        from ..present.figures.scaling import measured_sentence
        from ..studies.scaling import measured_growth

        say("measured beside predicted (predicted.csv):")
        for row in measured_growth(result.study):
            say(f"  {measured_sentence(row)}")
    return 0


def _atlas_members(path: str | None) -> list[str]:
    """Every model of the atlas file ``path`` as ``atlas:FILE#MODEL`` (none without a file), read before any
    analysis so that an unreadable atlas fails at once."""
    if path is None:
        return []
    from ..io.atlas import read_manifest
    from ..io.models import atlas_reference

    return [atlas_reference(path, entry.name) for entry in read_manifest(path).entries]


def add_grid_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """``grid``: the miniatures' depths and widths, other models, an atlas's members, where to write."""
    from ..io.models import MINIATURE_LAYERS, MINIATURE_WIDTHS

    grid = commands.add_parser(
        "grid", parents=[debug_option()], help="analyse a set of models for the scaling study (resumable)"
    )
    grid.add_argument(
        "--layers",
        type=int,
        nargs="+",
        choices=MINIATURE_LAYERS,
        metavar="L",
        help=f"miniature depths among {list(MINIATURE_LAYERS)} (default: all)",
    )
    grid.add_argument(
        "--widths",
        type=int,
        nargs="+",
        choices=MINIATURE_WIDTHS,
        metavar="N",
        help=f"miniature widths among {list(MINIATURE_WIDTHS)} (default: all)",
    )
    grid.add_argument(
        "--models",
        nargs="+",
        metavar="NAME",
        help="any model names or local directories (instead of, or besides, the miniatures)",
    )
    grid.add_argument(
        "--from-atlas",
        default=None,
        metavar="FILE",
        help="every model of this atlas file joins the study (offline: the lab's scaling grid, "
        "specbound_lab/reference_scaling/atlas.npz, a stand-in for the miniatures)",
    )
    grid.add_argument("--out", required=True, help="output directory (a re-run skips models done there)")
    grid.add_argument("--atlas", default=None, metavar="FILE", help="also export the profiles to this atlas")
    bound_options(grid)
    parallel_options(grid)
    grid.set_defaults(handler=_cmd_grid)
