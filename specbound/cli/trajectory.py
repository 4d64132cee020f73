"""``specbound trajectory``: the proxies at every saved step of a training run (a Trainer's output, a
list of checkpoint directories, or a Hub repository's revisions), resumable, read against W0 on request.

Example:
    >>> from specbound.cli import build_parser
    >>> build_parser().parse_args(["trajectory", "run", "--out", "t", "--reference", "init"]).reference
    'init'
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import SpecboundError
from ..core.text import quoted
from .arguments import (
    Parser,
    bound_options,
    compute_options,
    debug_option,
    executor_of,
    model_reference,
    parallel_options,
)
from .terminal import say


def _cmd_trajectory(args: argparse.Namespace) -> int:
    from ..api.runs import (
        RunSettings,
        checkpoint_of,
        hub_checkpoints,
        run_trajectory,
        trainer_checkpoints,
        with_reference,
    )

    sources = args.sources
    if args.revisions:
        if len(sources) != 1:
            raise SpecboundError("--revisions goes with one Hub repository id")
        steps, name = hub_checkpoints(sources[0], args.revisions, report=say), sources[0]
    elif len(sources) == 1 and Path(sources[0]).is_dir() and any(Path(sources[0]).glob("checkpoint-*")):
        steps, name = trainer_checkpoints(Path(sources[0])), Path(sources[0]).resolve().name
    else:
        for source in sources:
            if not Path(source).is_dir():
                raise SpecboundError(
                    f"{quoted(source)} is not a directory: give a Trainer output directory, checkpoint "
                    "directories, or a Hub id with --revisions"
                )
        steps = [checkpoint_of(Path(source)) for source in sources]
        name = Path(sources[0]).resolve().parent.name or "run"
    executor = executor_of(args)
    settings = RunSettings(
        args.name or name,
        l_phi=args.l_phi,
        grid_m=args.grid_m,
        use_cache=not args.no_cache,
        compute=executor.compute_options(compute_options(args)),
    )
    settings = with_reference(settings, args.reference, steps)
    result = run_trajectory(
        steps, Path(args.out), settings, executor=executor, report=lambda line: print(line, flush=True)
    )
    print(
        f"{len(result.rows)} of {len(steps)} steps ({result.analysed} analysed now), {len(result.missing)} "
        f"missing; wrote {', '.join(f.name for f in result.files)} to {args.out}"
    )
    return 0


def add_trajectory_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """``trajectory``: the run's sources, ``--revisions``, its name, the reference W0 and where to write."""
    trajectory = commands.add_parser(
        "trajectory",
        parents=[debug_option()],
        help="the proxies at every saved step of a training run (resumable)",
        description="SOURCE is a transformers Trainer output directory (its checkpoint-* folders), one or "
        "more checkpoint directories, or a Hub repository id with --revisions.",
    )
    trajectory.add_argument("sources", nargs="+", metavar="SOURCE", help="the run (see above)")
    trajectory.add_argument("--out", required=True, help="output directory (a re-run skips the steps done there)")
    trajectory.add_argument(
        "--revisions",
        nargs="+",
        metavar="REVISION",
        help="the Hub revisions to analyse, e.g. step1000 step2000; 'pythia' for Pythia's 154 saved steps; "
        "'all' for every branch whose name gives a step (listed through the Hub's API)",
    )
    trajectory.add_argument("--name", default=None, help="the run's name in the atlas (members NAME@STEP)")
    trajectory.add_argument(
        "--reference",
        metavar="REF",
        type=model_reference,
        default=None,
        help="also read every step against W0: 'init' for the run's first saved step, or a base "
        "model's name; the table gains ours_centred_log10, edelman_centred_log10, distance_frobenius "
        "(sum over the proxy matrices of ||W - W0||_F) and changed_matrices",
    )
    bound_options(trajectory)
    parallel_options(trajectory)
    trajectory.set_defaults(handler=_cmd_trajectory)
