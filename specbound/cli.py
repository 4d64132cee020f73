"""Command line: ``specbound analyze | models | export | grid | atlas``.

One boundary (:func:`main`): whatever goes wrong leaves with a non-zero status and one plain line on
stderr, a traceback only with ``--debug``. Output is built whole before it is written: ``--json``
prints one strict JSON object or nothing, files are written atomically. Progress goes to stderr only
when it is a terminal, so output can be piped.

Standard streams that are not there (SPEC §8):

* a closed pipe (``| head``) ends the program quietly, status 1;
* a full device (``> /dev/full``) is one error line, status 1;
* a closed stdout (``>&-``): a command whose result is its output (``analyze``, ``models``, ``atlas
  show``, ``lab show``) stops at once with one error line, status 1; a command whose result is files
  runs and writes them;
* a closed stderr (``2>&-``): the status alone tells of an error; the error text never goes to stdout.

A closed descriptor 0, 1 or 2 is pointed at the null device first, so no file the program opens
later takes its number.

Everything echoed from input (usage errors, model names, report lines) is escaped and shortened
(:func:`specbound.core.text.echoed`), on stdout as on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ._version import __version__
from .core.defaults import DEFAULT_MODEL, INTRUDER_EPS, INTRUDER_K, L_PHI, LARGE_NORM_11, P_MAX
from .core.errors import SpecboundError
from .core.limits import LIMITS, MEGABYTE, format_megabytes
from .core.progress import ProgressCallback, ProgressEvent, format_eta, silent
from .core.text import echoed, printable, quoted
from .io.files import describe_os_error, output_dir, require_parent, write_text_atomic

if TYPE_CHECKING:
    from .core.bounds import BoundAnalysis
    from .io.options import ComputeOptions
    from .studies.parallel import Executor

#: Exit statuses: a problem the user can fix, a usage error (argparse's), a bug, an interrupt.
EXIT_ERROR, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 3, 130

#: The entry-point group through which an installed package adds commands: each entry is a function that
#: takes the subcommands of :func:`build_parser` and adds its own parsers to them. The lab beside the
#: library (``specbound_lab``) adds ``specbound lab ...`` this way, so the library never imports it.
COMMAND_PLUGINS = "specbound.commands"


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


def _reference(text: str) -> str:
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


class _TerminalProgress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal: bytes of each file
    while downloading, layers with the estimated time left while analysing."""

    def __call__(self, event: ProgressEvent) -> None:
        fraction = event.fraction
        bar = "" if fraction is None else "#" * int(30 * fraction) + "-" * (30 - int(30 * fraction))
        amount = (
            f"{event.done / MEGABYTE:.1f}/{format_megabytes(event.total or 0)}"
            if event.stage == "download"
            else f"{event.done:.0f}/{event.total or 0:.0f} {format_eta(event.eta_s)}"
        )
        sys.stderr.write(f"\r{event.stage:<9} [{bar}] {amount} {event.detail[:40]:<40}")
        if fraction is not None and fraction >= 1.0:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _progress() -> ProgressCallback:
    return _TerminalProgress() if sys.stderr.isatty() else silent


def _analysis(args: argparse.Namespace) -> BoundAnalysis:
    from .core.bounds import BoundAnalysis, BoundSettings
    from .io.loading import load_profile

    profile = load_profile(
        args.model,
        _compute_options(args),
        progress=_progress(),
        use_cache=not args.no_cache,
        adapter_base=getattr(args, "base", None),
    )
    return BoundAnalysis.from_profile(profile, BoundSettings(l_phi=args.l_phi, grid_m=args.grid_m))


def _centred(args: argparse.Namespace, analysis: BoundAnalysis) -> tuple[BoundAnalysis, Any, Any] | None:
    """With ``--base REF``: the analysis centred at REF (SPEC §14), the reference and where each matrix
    moved (SPEC §14b, with ``--intruder-k`` and ``--intruder-eps``; None with ``--no-directions``); a
    LoRA adapter as the model is centred at its base (REF, else the one its config names); else None."""
    from .core.bounds import BoundAnalysis
    from .core.directions import DirectionSettings
    from .io.centred import Reference, directions_of
    from .io.loading import adapter_base, difference_profile, open_weights

    reference = args.base or adapter_base(args.model)
    if reference is None:
        return None
    options = _compute_options(args)
    cap = options.max_download_bytes
    tuned = open_weights(args.model, adapter_base=reference, progress=_progress(), max_download_bytes=cap)
    base = open_weights(reference, progress=_progress(), max_download_bytes=cap)
    delta = difference_profile(
        tuned,
        base,
        model=f"{args.model} - {reference}",
        options=options,
        progress=_progress(),
    )
    directions = (
        None
        if args.no_directions
        else directions_of(tuned, base, DirectionSettings(args.intruder_k, args.intruder_eps), progress=_progress())
    )
    return (
        BoundAnalysis.from_profile(analysis.profile, analysis.settings, delta=delta),
        Reference(reference),
        directions,
    )


def _centred_lines(centred: BoundAnalysis, reference: Any, directions: Any) -> list[str]:
    """The centred proxies, how many matrices the reference left unchanged and how many have intruder
    dimensions (SPEC §14b), for the text report."""
    from .core.logspace import to_log10 as log10
    from .present.numbers import format_log

    optimal, delta = centred.optimal, centred.schatten_profile
    changed = int((delta.rank > 0).sum())
    return [
        f"\n{reference.adaptation} {echoed(reference.model)} (S_p of W - W0, s_W of W):",
        f"  ours_centred:                  {format_log(optimal.log_total)}  (log10 {log10(optimal.log_total):.4f})",
        f"  edelman_centred:               {format_log(centred.log_edelman)}  (log10 {log10(centred.log_edelman):.4f})",
        f"  {changed} of {delta.shape.num_matrices} matrices differ from the reference "
        f"(the others have rank 0 and add nothing)",
        _intruders_line(directions),
    ]


def _intruders_line(directions: Any) -> str:
    """How many intruder dimensions, in how many matrices, with the settings and the near ties (or that
    the singular vectors were not compared, with ``--no-directions``)."""
    if directions is None:
        return "  intruder dimensions: not compared (--no-directions)"
    settings = directions.settings
    with_any = int((directions.intruders > 0).sum())
    ties = int(directions.near_tie.sum())
    return (
        f"  intruder dimensions (top k={settings.k} left singular vectors with |cos| < {settings.eps:g} to every "
        f"one of the reference's): {int(directions.intruders.sum())} in {with_any} matrices"
        + (f"; {ties} matrices have near-tied singular values (their counts may depend on the solver)" if ties else "")
    )


def _compute_options(args: argparse.Namespace) -> ComputeOptions:
    """The backend, the cores, the download cap and the (1,1) norms of the command line."""
    from .core.backend import BackendSpec
    from .core.limits import download_cap_bytes
    from .io.options import ComputeOptions

    return ComputeOptions(
        backend=BackendSpec(args.backend, args.device),
        workers=args.layer_workers,
        max_download_bytes=None if args.max_download_gb is None else download_cap_bytes(args.max_download_gb),
        large_norm_11=args.norm_11,
    )


def _write_stdout(text: str) -> None:
    """All of a command's output in one write, so an error while building it leaves stdout empty."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _say(line: str) -> None:
    """A report line that may echo input (a model name, an error about it): escaped, then printed."""
    _write_stdout(echoed(line, 4 * LIMITS.max_echoed_chars) + "\n")


def _power_law_lines(analysis: BoundAnalysis, laws: Any) -> str:
    """Per kind, the median power-law exponent α and α · log10 λ_max of its matrices (WeightWatcher's fit)."""
    import numpy as np

    lines = ["\npower-law fit of each matrix's eigenvalues (WeightWatcher 0.7.7's rule), medians per kind:"]
    for kind in analysis.profile.model_kinds:
        mask = analysis.profile.mask(kind) & ~laws.skipped
        if mask.any():
            lines.append(
                f"  {kind.value:<6} alpha {np.median(laws.alpha[mask]):.3f}  alpha_weighted "
                f"{np.median(laws.alpha_weighted[mask]):.3f}  ({int(mask.sum())} matrices fitted)"
            )
        else:
            lines.append(f"  {kind.value:<6} no matrix has two eigenvalues above the fit's floor")
    return "\n".join(lines)


def _layer_table(frame: Any) -> str:
    """The per-layer table in the dashboard's notation (four significant digits, a power of ten for large
    and small values, never E-notation); the log10 columns keep four decimals."""
    from .present.numbers import format_number

    def cell(column: str) -> Callable[[Any], str]:
        if column in ("layer", "stack_layer"):
            return lambda v: str(int(v))
        if frame[column].dtype.kind not in "fiu":  # an encoder-decoder's stack names
            return str
        if column.startswith("log10"):
            return lambda v: "-" if math.isnan(v) else f"{v:.4f}"
        return lambda v: "-" if math.isnan(v) else format_number(v)

    return str(frame.to_string(index=False, formatters={c: cell(c) for c in frame.columns}, na_rep="-"))


def _cmd_analyze(args: argparse.Namespace) -> int:
    from .core.logspace import to_log10 as log10
    from .present.numbers import format_log
    from .present.report import adaptations_line, analysis_json, layer_frame, shape_summary, to_json_text

    analysis = _analysis(args)
    laws = None
    if args.power_law:
        from .core.heavy_tail import power_law_table

        laws = power_law_table(analysis.profile.singular_values, analysis.profile.above_threshold)
    centred = _centred(args, analysis)
    if args.json:
        reference = (
            {} if centred is None else {"centred": centred[0], "reference": centred[1], "directions": centred[2]}
        )
        _write_stdout(to_json_text(analysis_json(analysis, args.p, power_law=laws, **reference)) + "\n")
        return 0
    shape = analysis.profile.shape
    optimal = analysis.evaluate()
    terms = optimal if args.p is None else analysis.evaluate(args.p)
    label = "p*" if args.p is None else f"p = {args.p:g}"
    lines = [
        f"{echoed(analysis.profile.model)}: {shape.family}, {shape_summary(shape)}, {shape.num_matrices} "
        f"matrices, L_phi={analysis.l_phi:g}, grid m={analysis.grid_m}",
        *([note] if (note := adaptations_line(shape)) else []),
        f"spectrum-adaptive proxy at p*:   {format_log(optimal.log_total)}  (log10 {log10(optimal.log_total):.4f})",
    ]
    if args.p is not None:
        lines.append(
            f"spectrum-adaptive proxy at {label}: {format_log(terms.log_total)}  (log10 {log10(terms.log_total):.4f})"
        )
    lines += [
        f"Edelman-style proxy:             {format_log(analysis.log_edelman)}  "
        f"(log10 {log10(analysis.log_edelman):.4f})",
        *([] if centred is None else _centred_lines(*centred)),
        f"\nper layer, c(W; p) at {label} (sqrt(L) = {math.sqrt(shape.num_layers):.4g} is added to the total):",
        _layer_table(layer_frame(analysis, terms)),
        *([] if laws is None else [_power_law_lines(analysis, laws)]),
        "\nThese are proxies of the bound's leading complexity factor, not the generalization gap.",
    ]
    _write_stdout("\n".join(lines) + "\n")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from .io.checkpoints.hub import is_cached
    from .io.families import supported_model_types
    from .io.models import catalog

    rows = catalog(is_cached)
    names = [entry.name if entry.name != entry.repo_id else entry.family for entry in rows]  # else its model_type
    width = max(10, *map(len, names))
    print(f"{'name':<{width}} {'L':>3} {'N':>4} {'H':>3}  {'offline':<8} source")
    for name, entry in zip(names, rows, strict=True):
        mark = "yes" if entry.available_offline else "no"
        print(
            f"{name:<{width}} {entry.num_layers:>3} {entry.hidden_size:>4} {entry.num_heads:>3}  {mark:<8} "
            f"{entry.repo_id}"
        )
    print(
        "\nL of an encoder-decoder (t5, bart) counts its encoder and decoder layers together, as its proxies do.\n"
        f"Any Hub repository id (owner/name) or local checkpoint directory of a supported family "
        f"({supported_model_types()}) also works, and so does a model of an atlas file (atlas:FILE#MODEL)."
    )
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .present.report import (
        CENTRED_PREFIX,
        analysis_json,
        layer_frame,
        singular_values_frame,
        terms_frame,
        to_json_text,
    )

    out = Path(args.out)
    if not out.is_dir():
        require_parent(out, "output directory")  # before the analysis, not after it
    analysis = _analysis(args)
    terms = analysis.evaluate(args.p)
    tables = {
        "matrices": terms_frame(analysis, terms),
        "layers": layer_frame(analysis, terms),
        "singular_values": singular_values_frame(analysis),
    }
    centred = _centred(args, analysis)
    reference = {} if centred is None else {"centred": centred[0], "reference": centred[1]}
    if centred is not None:  # the centred columns beside the weights' own, named as to_frame names them
        at_p = centred[0].evaluate(args.p)
        centred_tables = (
            ("matrices", terms_frame(centred[0], at_p, centred[2])),
            ("layers", layer_frame(centred[0], at_p)),
        )
        for name, frame in centred_tables:
            added = [c for c in frame.columns if c.startswith(CENTRED_PREFIX)]
            tables[name] = tables[name].assign(**{c: frame[c].to_numpy() for c in added})
    texts = {
        f"{name}.{args.format}": frame.to_csv(index=False)
        if args.format == "csv"
        else frame.to_json(orient="records", indent=1)
        for name, frame in tables.items()
    }
    texts["summary.json"] = to_json_text(
        {k: v for k, v in analysis_json(analysis, args.p, **reference).items() if k != "matrices"}, indent=1
    )
    output_dir(out, "output directory")
    try:
        for name, text in texts.items():
            write_text_atomic(out / name, text)
    except OSError as exc:
        raise SpecboundError(f"cannot write to {out.name}: {describe_os_error(exc)}") from None
    tables_written = ", ".join(name for name in texts if name != "summary.json")
    _say(f"wrote {tables_written} and summary.json to {out}")
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    from .api.batch import miniature_names, run_grid
    from .core.bounds import BoundSettings
    from .studies.status import Status

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
        progress=lambda name: _progress(),
        report=_say,
        executor=_executor(args),
        compute=_compute_options(args),
    )
    done = sum(o.status is Status.DONE for o in result.outcomes)
    _say(
        f"{len(result.succeeded)} of {len(result.outcomes)} models available ({done} analysed now, "
        f"{len(result.succeeded) - done} already done), {len(result.missing)} missing; wrote "
        f"{', '.join(f.name for f in result.files)} to {args.out}"
    )
    if result.missing:
        _say(f"missing models are listed with how to get them in {Path(args.out) / 'missing.csv'}")
    if result.study is not None:
        from .present.figures.scaling import measured_sentence
        from .studies.scaling import measured_growth

        _say("measured beside predicted (predicted.csv):")
        for row in measured_growth(result.study):
            _say(f"  {measured_sentence(row)}")
    return 0


def _atlas_members(path: str | None) -> list[str]:
    """Every model of the atlas file ``path`` as ``atlas:FILE#MODEL`` (none without a file), read before any
    analysis so that an unreadable atlas fails at once."""
    if path is None:
        return []
    from .io.atlas import read_manifest
    from .io.models import atlas_reference

    return [atlas_reference(path, entry.name) for entry in read_manifest(path).entries]


def _cmd_trajectory(args: argparse.Namespace) -> int:
    from .api.runs import (
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
        steps, name = hub_checkpoints(sources[0], args.revisions, report=_say), sources[0]
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
    executor = _executor(args)
    settings = RunSettings(
        args.name or name,
        l_phi=args.l_phi,
        grid_m=args.grid_m,
        use_cache=not args.no_cache,
        compute=executor.compute_options(_compute_options(args)),
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


def _cmd_atlas_export(args: argparse.Namespace) -> int:
    from .io.atlas import member_names, save_atlas
    from .io.loading import load_profile

    require_parent(Path(args.out), "atlas")  # before the analyses, not after them
    profiles, failed = [], []
    for name in args.models:
        try:
            profiles.append(
                load_profile(name, _compute_options(args), progress=_progress(), use_cache=not args.no_cache)
            )
        except SpecboundError as exc:
            failed.append(name)
            _say(f"{name}: missing: {exc}")
    if not profiles:
        raise SpecboundError("no profile to export: none of the models could be analysed")
    try:
        # a model exported from a folder is stored under the folder's name, not this machine's path to it
        path = save_atlas(profiles, args.out, names=member_names([p.model for p in profiles]))
    except OSError as exc:
        raise SpecboundError(f"cannot write the atlas {Path(args.out).name}: {describe_os_error(exc)}") from None
    _say(f"wrote {len(profiles)} profile(s) to {path}" + (f"; left out: {', '.join(failed)}" if failed else ""))
    return 0


def _cmd_atlas_show(args: argparse.Namespace) -> int:
    from .io.atlas import read_manifest

    manifest = read_manifest(args.file)
    lines = [
        f"{args.file}: specbound atlas, schema {manifest.schema}, {len(manifest.entries)} model(s), "
        f"written by {printable(manifest.created_by) or 'unknown'}",
        f"{'family':<12} {'L':>3} {'N':>5} {'H':>3} {'d_ff':>5}  {'revision':<16} name",
    ]
    for e in manifest.entries:
        lines.append(
            f"{printable(e.shape.family):<12} {e.shape.num_layers:>3} {e.shape.hidden_size:>5} "
            f"{e.shape.num_heads:>3} {e.shape.ffn_size:>5}  {printable(e.revision):<16} {printable(e.name)}"
        )
    _write_stdout("\n".join(lines) + "\n")
    return 0


def _add_batch_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    """The scaling-study commands: ``grid`` and ``atlas export | show``."""
    from .io.models import MINIATURE_LAYERS, MINIATURE_WIDTHS

    grid = commands.add_parser(
        "grid", parents=[_debug_option()], help="analyse a set of models for the scaling study (resumable)"
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
    _bound_options(grid)
    _parallel_options(grid)
    grid.set_defaults(handler=_cmd_grid)

    trajectory = commands.add_parser(
        "trajectory",
        parents=[_debug_option()],
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
        type=_reference,
        default=None,
        help="also read every step against W0: 'init' for the run's first saved step, or a base "
        "model's name; the table gains ours_centred_log10, edelman_centred_log10, distance_frobenius "
        "(sum over the proxy matrices of ||W - W0||_F) and changed_matrices",
    )
    _bound_options(trajectory)
    _parallel_options(trajectory)
    trajectory.set_defaults(handler=_cmd_trajectory)

    atlas = commands.add_parser(
        "atlas", parents=[_debug_option()], help="export spectral profiles to one portable file, or show one"
    )
    actions = atlas.add_subparsers(dest="atlas_command", required=True)
    export = actions.add_parser(
        "export", parents=[_debug_option()], help="write the profiles of some models to an atlas file"
    )
    export.add_argument("--models", nargs="+", required=True, metavar="NAME", help="models to include")
    export.add_argument("--out", required=True, metavar="FILE", help="atlas file to write (.npz)")
    _bound_options(export, bound_terms=False)
    export.set_defaults(handler=_cmd_atlas_export)
    show = actions.add_parser(
        "show", parents=[_debug_option()], help="list the models of an atlas file (validating it)"
    )
    show.add_argument("file", help="atlas file")
    show.set_defaults(handler=_cmd_atlas_show, prints_result="atlas show")


def _parallel_options(parser: argparse.ArgumentParser) -> None:
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


def _executor(args: argparse.Namespace) -> Executor:
    from .studies.parallel import Executor

    return Executor(workers=args.workers, dask=args.dask)


def _bound_options(parser: argparse.ArgumentParser, *, bound_terms: bool = True) -> None:
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
    _compute_arguments(parser)


def _compute_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the linear algebra runs, how many layers at once, and the operator's download cap."""
    from .core.backend import BACKENDS, DEFAULT_BACKEND, DEFAULT_DEVICE

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


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one stderr line (SPEC §5), still exiting with status 2."""

    def error(self, message: str) -> NoReturn:
        """argparse echoes the offending values raw (``unrecognized arguments: ...``): escaped and
        shortened here, the one place every usage error passes."""
        self.exit(2, f"{self.prog}: error: {echoed(message)} (see {self.prog} --help)\n")


def _debug_option() -> _Parser:
    """``--debug`` accepted after the command too (``specbound analyze X --debug``)."""
    parent = _Parser(add_help=False)
    parent.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an unexpected error"
    )
    return parent


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specbound",
        description="Spectra and spectrum-adaptive generalization-bound proxies of trained Transformers.",
    )
    parser.add_argument("--version", action="version", version=f"specbound {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    commands = parser.add_subparsers(dest="command", required=True)

    def model_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "model",
            nargs="?",
            default=DEFAULT_MODEL,
            help=f"local directory, Hub repo id, miniature alias like L4-H256, atlas model "
            f"atlas:FILE#MODEL, or '{DEFAULT_MODEL}' (the bundled model, default)",
        )
        _bound_options(p)
        p.add_argument("--p", type=_p_value, default=None, help="also evaluate every matrix at this Schatten index")

    analyze = commands.add_parser(
        "analyze", parents=[_debug_option()], help="analyse a model and print its bound terms"
    )
    model_options(analyze)
    analyze.add_argument(
        "--json", action="store_true", help="print one JSON object (its fields: the manual's JSON output page)"
    )
    _base_option(analyze)
    analyze.add_argument(
        "--power-law",
        action="store_true",
        help="also fit each matrix's eigenvalue spectrum with a power law as WeightWatcher 0.7.7 does "
        "(alpha and alpha_weighted per matrix in --json; medians per kind otherwise); about a second "
        "per large feed-forward matrix",
    )
    analyze.set_defaults(handler=_cmd_analyze, prints_result="analyze")

    models = commands.add_parser(
        "models", parents=[_debug_option()], help="list the catalog and what is available offline"
    )
    models.set_defaults(handler=_cmd_models, prints_result="models")

    export = commands.add_parser(
        "export", parents=[_debug_option()], help="write per-matrix tables and singular values"
    )
    model_options(export)
    export.add_argument("--format", choices=("csv", "json"), default="csv")
    export.add_argument("--out", required=True, help="output directory")
    _base_option(export, "; the tables gain the centred columns (delta_*) and summary.json the reference")
    export.set_defaults(handler=_cmd_export)
    _add_batch_commands(commands)
    _add_plugin_commands(commands)
    return parser


def _base_option(command: argparse.ArgumentParser, more: str = "") -> None:
    """``--base REF``: the reference of the centred proxies, and the base a LoRA adapter is merged into;
    with it, ``--intruder-k`` and ``--intruder-eps`` of the singular vectors' comparison (SPEC §14b), or
    ``--no-directions`` to skip that comparison (refused beside either of the two)."""
    command.add_argument(
        "--base",
        metavar="REF",
        type=_reference,
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


def _add_plugin_commands(commands: argparse._SubParsersAction[_Parser]) -> None:
    """The commands of every installed package registered under :data:`COMMAND_PLUGINS`, by name.

    A plugin that fails to load or to add its commands (its own dependencies missing, a command name
    already taken) is left out with one stderr line, so that the library's own commands keep working."""
    for entry in sorted(entry_points(group=COMMAND_PLUGINS), key=lambda e: e.name):
        try:
            entry.load()(commands)
        except Exception as exc:  # someone else's code: whatever it raises, the library's commands stay
            first = " ".join(str(exc).split())[:200]
            _fail(
                f"warning: the '{entry.name}' commands of {entry.value} are unavailable: {type(exc).__name__}: {first}"
            )


def _guard_standard_streams() -> bool:
    """Point closed descriptors 0-2 at the null device (so no file opened later takes their number),
    give Python a stderr that swallows what it is told when there is none (never stdout instead),
    and say whether stdout was closed."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    stdout_closed = sys.stdout is None or 1 in closed
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the process's stdout: closed at exit)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return stdout_closed


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure becomes one stderr line and a non-zero status (see EXIT_*)."""
    stdout_closed = _guard_standard_streams()
    args = build_parser().parse_args(argv)
    # a command whose result is what it prints says so (``prints_result``, its name): with stdout closed it
    # has nothing to do
    command = getattr(args, "prints_result", None)
    if stdout_closed and command:
        _fail(f"error: standard output is closed, and the result of '{command}' is what it prints")
        return EXIT_ERROR
    try:
        status = _run_handler(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to say, to anyone
        _detach_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        _fail("interrupted")
        return EXIT_INTERRUPTED
    except SpecboundError as exc:
        _fail(f"error: {exc}")
        return EXIT_ERROR
    except OSError as exc:  # a write to stdout or a file outside the package's own handling (a full disk)
        _fail(f"error: {describe_os_error(exc, name_file=True)}")
        return EXIT_ERROR
    except MemoryError:
        _fail("error: out of memory (try a smaller model or --grid-m)")
        return EXIT_ERROR
    except Exception as exc:  # a bug: one line, the traceback only on request
        if args.debug:
            traceback.print_exc()
        first = " ".join(str(exc).split())[:200]
        _fail(
            f"internal error: {type(exc).__name__}{': ' + first if first else ''}; run with --debug for the traceback"
        )
        return EXIT_INTERNAL


def _run_handler(args: argparse.Namespace) -> int:
    """The command, its warnings printed as one line each (the caller's warning filters restored after)."""
    with warnings.catch_warnings():
        warnings.showwarning = _warning_line
        return int(args.handler(args))


def _warning_line(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning as one stderr line, ``specbound: warning: ...``, never a source location."""
    print(f"specbound: warning: {echoed(str(message), 4 * LIMITS.max_echoed_chars)}", file=sys.stderr)


def _fail(message: str) -> None:
    """One line on stderr; stdout, if it cannot take its last bytes, is detached so exit stays quiet."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        _detach_stdout()
    line = echoed(message, 4 * LIMITS.max_echoed_chars)
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stderr may be gone: no one to tell
        sys.stderr.write(f"specbound: {line}\n")
        sys.stderr.flush()


def _detach_stdout() -> None:
    """Point stdout at devnull, as the Python docs advise after EPIPE, so the flush at exit is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (captured in a test)
        pass


if __name__ == "__main__":
    sys.exit(main())
