"""``specbound export``: one model's per-matrix and per-layer tables and its singular values, as CSV or
JSON files beside a ``summary.json``, written atomically into an output directory.

Example:
    >>> import tempfile
    >>> from specbound.cli import main
    >>> main(["export", "minilm-l6", "--out", tempfile.mkdtemp()])  # doctest: +ELLIPSIS
    wrote matrices.csv, layers.csv, singular_values.csv and summary.json to ...
    0
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import SpecboundError
from ..io.files import describe_os_error, output_dir, require_parent, write_text_atomic
from .analyze import analysis_of, centred_of
from .arguments import Parser, base_option, debug_option, model_options
from .terminal import say


def _cmd_export(args: argparse.Namespace) -> int:
    from ..present.report import (
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
    analysis = analysis_of(args)
    terms = analysis.evaluate(args.p)
    tables = {
        "matrices": terms_frame(analysis, terms),
        "layers": layer_frame(analysis, terms),
        "singular_values": singular_values_frame(analysis),
    }
    centred = centred_of(args, analysis)
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
    say(f"wrote {tables_written} and summary.json to {out}")
    return 0


def add_export_command(commands: argparse._SubParsersAction[Parser]) -> None:
    """``export``: the model's options, ``--format``, ``--out`` and ``--base``."""
    export = commands.add_parser("export", parents=[debug_option()], help="write per-matrix tables and singular values")
    model_options(export)
    export.add_argument("--format", choices=("csv", "json"), default="csv")
    export.add_argument("--out", required=True, help="output directory")
    base_option(export, "; the tables gain the centred columns (delta_*) and summary.json the reference")
    export.set_defaults(handler=_cmd_export)
