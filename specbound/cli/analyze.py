"""``specbound analyze`` (one model's proxies, as text or ``--json``, centred at a reference with
``--base``) and ``specbound models`` (the catalog and what is available offline).

Example:
    >>> from specbound.cli import main
    >>> main(["analyze", "minilm-l6", "--json"])  # doctest: +ELLIPSIS
    {...}
    0
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.text import echoed
from .arguments import Parser, base_option, compute_options, debug_option, model_options
from .terminal import progress, write_stdout

if TYPE_CHECKING:
    from ..core.bounds import BoundAnalysis


def analysis_of(args: argparse.Namespace) -> BoundAnalysis:
    from ..core.bounds import BoundAnalysis, BoundSettings
    from ..io.loading import load_profile

    profile = load_profile(
        args.model,
        compute_options(args),
        progress=progress(),
        use_cache=not args.no_cache,
        adapter_base=getattr(args, "base", None),
    )
    return BoundAnalysis.from_profile(profile, BoundSettings(l_phi=args.l_phi, grid_m=args.grid_m))


def centred_of(args: argparse.Namespace, analysis: BoundAnalysis) -> tuple[BoundAnalysis, Any, Any] | None:
    """With ``--base REF``: the analysis centred at REF (SPEC §14), the reference and where each matrix
    moved (SPEC §14b, with ``--intruder-k`` and ``--intruder-eps``; None with ``--no-directions``); a
    LoRA adapter as the model is centred at its base (REF, else the one its config names); else None."""
    from ..core.bounds import BoundAnalysis
    from ..core.directions import DirectionSettings
    from ..io.centred import Reference, directions_of
    from ..io.loading import adapter_base, difference_profile, open_weights

    reference = args.base or adapter_base(args.model)
    if reference is None:
        return None
    options = compute_options(args)
    cap = options.max_download_bytes
    tuned = open_weights(args.model, adapter_base=reference, progress=progress(), max_download_bytes=cap)
    base = open_weights(reference, progress=progress(), max_download_bytes=cap)
    delta = difference_profile(
        tuned,
        base,
        model=f"{args.model} - {reference}",
        options=options,
        progress=progress(),
    )
    directions = (
        None
        if args.no_directions
        else directions_of(tuned, base, DirectionSettings(args.intruder_k, args.intruder_eps), progress=progress())
    )
    return (
        BoundAnalysis.from_profile(analysis.profile, analysis.settings, delta=delta),
        Reference(reference),
        directions,
    )


def _centred_lines(centred: BoundAnalysis, reference: Any, directions: Any) -> list[str]:
    """The centred proxies, how many matrices the reference left unchanged and how many have intruder
    dimensions (SPEC §14b), for the text report."""
    from ..core.logspace import to_log10 as log10
    from ..present.numbers import format_log

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
    from ..present.numbers import format_number

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
    from ..core.logspace import to_log10 as log10
    from ..present.numbers import format_log
    from ..present.report import adaptations_line, analysis_json, layer_frame, shape_summary, to_json_text

    analysis = analysis_of(args)
    laws = None
    if args.power_law:
        from ..core.heavy_tail import power_law_table

        laws = power_law_table(analysis.profile.singular_values, analysis.profile.above_threshold)
    centred = centred_of(args, analysis)
    if args.json:
        reference = (
            {} if centred is None else {"centred": centred[0], "reference": centred[1], "directions": centred[2]}
        )
        write_stdout(to_json_text(analysis_json(analysis, args.p, power_law=laws, **reference)) + "\n")
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
    write_stdout("\n".join(lines) + "\n")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from ..io.checkpoints.hub import is_cached
    from ..io.families import supported_model_types
    from ..io.models import catalog

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


def add_analyze_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """``analyze`` (its options: the model's, ``--json``, ``--base`` and ``--power-law``) and ``models``."""
    analyze = commands.add_parser("analyze", parents=[debug_option()], help="analyse a model and print its bound terms")
    model_options(analyze)
    analyze.add_argument(
        "--json", action="store_true", help="print one JSON object (its fields: the manual's JSON output page)"
    )
    base_option(analyze)
    analyze.add_argument(
        "--power-law",
        action="store_true",
        help="also fit each matrix's eigenvalue spectrum with a power law as WeightWatcher 0.7.7 does "
        "(alpha and alpha_weighted per matrix in --json; medians per kind otherwise); about a second "
        "per large feed-forward matrix",
    )
    analyze.set_defaults(handler=_cmd_analyze, prints_result="analyze")

    models = commands.add_parser(
        "models", parents=[debug_option()], help="list the catalog and what is available offline"
    )
    models.set_defaults(handler=_cmd_models, prints_result="models")
