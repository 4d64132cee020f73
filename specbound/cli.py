"""Command line: ``specbound analyze | models | export | grid | atlas``.

Errors leave with a non-zero status and one plain line on stderr; progress goes to stderr only
when it is a terminal, so ``--json`` output can be piped.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from . import __version__
from .defaults import DEFAULT_MODEL, L_PHI, P_MAX
from .errors import SpecboundError
from .progress import ProgressEvent, silent


def _checked(convert, accept, requirement: str):
    """An argparse type: ``convert`` the text, then require ``accept(value)`` (one-line errors)."""
    kind = "an integer" if convert is int else "a number"

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {kind}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{requirement}, got {text}")
        return value

    return parse


_p_value = _checked(float, lambda v: 0.0 <= v <= P_MAX, f"p must lie in [0, {P_MAX:g}]")
_positive_float = _checked(float, lambda v: math.isfinite(v) and v > 0, "expected a positive number")
_positive_int = _checked(int, lambda v: v >= 1, "expected a positive integer")


class _TerminalProgress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __call__(self, event: ProgressEvent) -> None:
        fraction = event.fraction
        bar = "" if fraction is None else "#" * int(30 * fraction) + "-" * (30 - int(30 * fraction))
        amount = f"{event.done / 1e6:.1f}/{(event.total or 0) / 1e6:.1f} MB" if event.stage == "download" \
            else f"{event.done:.0f}/{event.total or 0:.0f}"
        sys.stderr.write(f"\r{event.stage:<9} [{bar}] {amount} {event.detail[:40]:<40}")
        if fraction is not None and fraction >= 1.0:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _progress():
    return _TerminalProgress() if sys.stderr.isatty() else silent


def _analysis(args: argparse.Namespace):
    from .analysis import load_profile
    from .bounds import BoundAnalysis, BoundSettings

    profile = load_profile(args.model, progress=_progress(), use_cache=not args.no_cache)
    return BoundAnalysis.from_profile(profile, BoundSettings(l_phi=args.l_phi, grid_m=args.grid_m))


def _cmd_analyze(args: argparse.Namespace) -> int:
    from .report import analysis_json, layer_frame, log10

    analysis = _analysis(args)
    if args.json:
        json.dump(analysis_json(analysis, args.p), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    shape = analysis.profile.shape
    optimal = analysis.evaluate()
    terms = optimal if args.p is None else analysis.evaluate(args.p)
    label = "p*" if args.p is None else f"p = {args.p:g}"
    print(f"{analysis.profile.model}: L={shape.num_layers} N={shape.hidden_size} H={shape.num_heads} "
          f"d={shape.head_dim} d_ff={shape.ffn_size}, {shape.num_matrices} matrices, "
          f"L_phi={analysis.settings.l_phi:g}, grid m={analysis.grid_m}")
    print(f"spectrum-adaptive proxy at p*:   {optimal.total:.6g}  (log10 {log10(optimal.log_total):.4f})")
    if args.p is not None:
        print(f"spectrum-adaptive proxy at {label}: {terms.total:.6g}  (log10 {log10(terms.log_total):.4f})")
    print(f"Edelman-style proxy:             {analysis.edelman:.6g}  (log10 {log10(analysis.log_edelman):.4f})")
    print(f"\nper layer, c(W; p) at {label} (sqrt(L) = {math.sqrt(shape.num_layers):.4g} is added to the total):")
    print(layer_frame(analysis, terms).to_string(index=False, float_format=lambda v: f"{v:.5g}"))
    print("\nThese are proxies of the bound's leading complexity factor, not the generalization gap.")
    return 0


def _cmd_models(args: argparse.Namespace) -> int:
    from .models import catalog

    rows = catalog()
    print(f"{'name':<10} {'L':>3} {'N':>4} {'H':>3}  {'offline':<8} source")
    for entry in rows:
        mark = "yes" if entry.available_offline else "no"
        print(f"{entry.name:<10} {entry.num_layers:>3} {entry.hidden_size:>4} {entry.num_heads:>3}  "
              f"{mark:<8} {entry.repo_id}")
    print("\nAny Hub repository id (owner/name) or local checkpoint directory of a BERT-family encoder "
          "also works.")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .report import analysis_json, layer_frame, singular_values_frame, terms_frame

    analysis = _analysis(args)
    terms = analysis.evaluate(args.p)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        tables = {"matrices": terms_frame(analysis, terms), "layers": layer_frame(analysis, terms),
                  "singular_values": singular_values_frame(analysis)}
        for name, frame in tables.items():
            if args.format == "csv":
                frame.to_csv(out / f"{name}.csv", index=False)
            else:
                frame.to_json(out / f"{name}.json", orient="records", indent=1)
        (out / "summary.json").write_text(json.dumps(
            {k: v for k, v in analysis_json(analysis, args.p).items() if k != "matrices"}, indent=1))
    except OSError as exc:
        raise SpecboundError(f"cannot write to {out}: {exc.strerror}") from None
    print(f"wrote {', '.join(f'{n}.{args.format}' for n in tables)} and summary.json to {out}")
    return 0


def _cmd_grid(args: argparse.Namespace) -> int:
    from .batch import Status, miniature_names, run_grid
    from .bounds import BoundSettings

    names = miniature_names(args.layers, args.widths) if (args.layers or args.widths or not args.models) else []
    names += [m for m in args.models or [] if m not in names]
    result = run_grid(names, Path(args.out), settings=BoundSettings(l_phi=args.l_phi, grid_m=args.grid_m),
                      atlas=args.atlas, use_cache=not args.no_cache, progress=lambda name: _progress(),
                      report=lambda line: print(line, flush=True))
    done = sum(o.status is Status.DONE for o in result.outcomes)
    print(f"{len(result.succeeded)} of {len(result.outcomes)} models available ({done} analysed now, "
          f"{len(result.succeeded) - done} already done), {len(result.missing)} missing; wrote "
          f"{', '.join(f.name for f in result.files)} to {args.out}")
    if result.missing:
        print(f"missing models are listed with how to get them in {Path(args.out) / 'missing.csv'}")
    return 0


def _cmd_atlas_export(args: argparse.Namespace) -> int:
    from .analysis import load_profile
    from .atlas import save_atlas

    profiles, failed = [], []
    for name in args.models:
        try:
            profiles.append(load_profile(name, progress=_progress(), use_cache=not args.no_cache))
        except SpecboundError as exc:
            failed.append(name)
            print(f"{name}: missing: {exc}", flush=True)
    if not profiles:
        raise SpecboundError("no profile to export: none of the models could be analysed")
    try:
        path = save_atlas(profiles, args.out)
    except OSError as exc:
        raise SpecboundError(f"cannot write the atlas {args.out}: {exc.strerror}") from None
    print(f"wrote {len(profiles)} profile(s) to {path}" + (f"; left out: {', '.join(failed)}" if failed else ""))
    return 0


def _cmd_atlas_show(args: argparse.Namespace) -> int:
    from .atlas import read_manifest

    manifest = read_manifest(args.file)
    print(f"{args.file}: specbound atlas, schema {manifest.schema}, {len(manifest.entries)} model(s), "
          f"written by {manifest.created_by or 'unknown'}")
    print(f"{'L':>3} {'N':>5} {'H':>3} {'d_ff':>5}  {'revision':<16} name")
    for e in manifest.entries:
        print(f"{e.shape.num_layers:>3} {e.shape.hidden_size:>5} {e.shape.num_heads:>3} "
              f"{e.shape.ffn_size:>5}  {e.revision:<16} {e.name}")
    return 0


def _add_batch_commands(commands: argparse._SubParsersAction) -> None:
    """The scaling-study commands: ``grid`` and ``atlas export | show``."""
    from .models import MINIATURE_LAYERS, MINIATURE_WIDTHS

    grid = commands.add_parser("grid", help="analyse a set of models for the scaling study (resumable)")
    grid.add_argument("--layers", type=int, nargs="+", choices=MINIATURE_LAYERS, metavar="L",
                      help=f"miniature depths among {list(MINIATURE_LAYERS)} (default: all)")
    grid.add_argument("--widths", type=int, nargs="+", choices=MINIATURE_WIDTHS, metavar="N",
                      help=f"miniature widths among {list(MINIATURE_WIDTHS)} (default: all)")
    grid.add_argument("--models", nargs="+", metavar="NAME",
                      help="any model names or local directories (instead of, or besides, the miniatures)")
    grid.add_argument("--out", required=True, help="output directory (a re-run skips models done there)")
    grid.add_argument("--atlas", default=None, metavar="FILE", help="also export the profiles to this atlas")
    grid.add_argument("--l-phi", type=_positive_float, default=L_PHI,
                      help=f"Lipschitz bound of the activation (default {L_PHI})")
    grid.add_argument("--grid-m", type=_positive_int, default=None,
                      help="grid resolution m of P_m (default ceil(L + ln N) per model)")
    grid.add_argument("--no-cache", action="store_true", help="recompute profiles, ignoring the profile cache")
    grid.set_defaults(handler=_cmd_grid)

    atlas = commands.add_parser("atlas", help="export spectral profiles to one portable file, or show one")
    actions = atlas.add_subparsers(dest="atlas_command", required=True)
    export = actions.add_parser("export", help="write the profiles of some models to an atlas file")
    export.add_argument("--models", nargs="+", required=True, metavar="NAME", help="models to include")
    export.add_argument("--out", required=True, metavar="FILE", help="atlas file to write (.npz)")
    export.add_argument("--no-cache", action="store_true", help="recompute profiles, ignoring the profile cache")
    export.set_defaults(handler=_cmd_atlas_export)
    show = actions.add_parser("show", help="list the models of an atlas file (validating it)")
    show.add_argument("file", help="atlas file")
    show.set_defaults(handler=_cmd_atlas_show)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one stderr line (SPEC §5), still exiting with status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specbound",
        description="Spectra and spectrum-adaptive generalization-bound proxies of trained BERT encoders.")
    parser.add_argument("--version", action="version", version=f"specbound {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def model_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("model", nargs="?", default=DEFAULT_MODEL,
                       help=f"local directory, Hub repo id, miniature alias like L4-H256, or "
                            f"'{DEFAULT_MODEL}' (default)")
        p.add_argument("--l-phi", type=_positive_float, default=L_PHI,
                       help=f"Lipschitz bound of the activation (default {L_PHI})")
        p.add_argument("--grid-m", type=_positive_int, default=None,
                       help="grid resolution m of P_m (default ceil(L + ln N))")
        p.add_argument("--p", type=_p_value, default=None,
                       help="also evaluate every matrix at this Schatten index")
        p.add_argument("--no-cache", action="store_true", help="recompute, ignoring the profile cache")

    analyze = commands.add_parser("analyze", help="analyse a model and print its bound terms")
    model_options(analyze)
    analyze.add_argument("--json", action="store_true", help="print the JSON object of SPEC §5")
    analyze.set_defaults(handler=_cmd_analyze)

    models = commands.add_parser("models", help="list the catalog and what is available offline")
    models.set_defaults(handler=_cmd_models)

    export = commands.add_parser("export", help="write per-matrix tables and singular values")
    model_options(export)
    export.add_argument("--format", choices=("csv", "json"), default="csv")
    export.add_argument("--out", required=True, help="output directory")
    export.set_defaults(handler=_cmd_export)
    _add_batch_commands(commands)
    __import__("specbound.lab.cli", fromlist=["add_lab_commands"]).add_lab_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except SpecboundError as exc:
        print(f"specbound: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("specbound: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
