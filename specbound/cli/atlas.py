"""``specbound atlas export | show``: spectral profiles of several models in one portable file, and the
list of what such a file holds (validating it).

Example:
    >>> from specbound.cli import build_parser
    >>> build_parser().parse_args(["atlas", "show", "profiles.npz"]).prints_result
    'atlas show'
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import SpecboundError
from ..core.text import printable
from ..io.files import describe_os_error, require_parent
from .arguments import Parser, bound_options, compute_options, debug_option
from .terminal import progress, say, write_stdout


def _cmd_atlas_export(args: argparse.Namespace) -> int:
    from ..io.atlas import member_names, save_atlas
    from ..io.loading import load_profile

    require_parent(Path(args.out), "atlas")  # before the analyses, not after them
    profiles, failed = [], []
    for name in args.models:
        try:
            profiles.append(load_profile(name, compute_options(args), progress=progress(), use_cache=not args.no_cache))
        except SpecboundError as exc:
            failed.append(name)
            say(f"{name}: missing: {exc}")
    if not profiles:
        raise SpecboundError("no profile to export: none of the models could be analysed")
    try:
        # a model exported from a folder is stored under the folder's name, not this machine's path to it
        path = save_atlas(profiles, args.out, names=member_names([p.model for p in profiles]))
    except OSError as exc:
        raise SpecboundError(f"cannot write the atlas {Path(args.out).name}: {describe_os_error(exc)}") from None
    say(f"wrote {len(profiles)} profile(s) to {path}" + (f"; left out: {', '.join(failed)}" if failed else ""))
    return 0


def _cmd_atlas_show(args: argparse.Namespace) -> int:
    from ..io.atlas import read_manifest

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
    write_stdout("\n".join(lines) + "\n")
    return 0


def add_atlas_commands(commands: argparse._SubParsersAction[Parser]) -> None:
    """``atlas export`` (models to one file) and ``atlas show`` (a file's models)."""
    atlas = commands.add_parser(
        "atlas", parents=[debug_option()], help="export spectral profiles to one portable file, or show one"
    )
    actions = atlas.add_subparsers(dest="atlas_command", required=True)
    export = actions.add_parser(
        "export", parents=[debug_option()], help="write the profiles of some models to an atlas file"
    )
    export.add_argument("--models", nargs="+", required=True, metavar="NAME", help="models to include")
    export.add_argument("--out", required=True, metavar="FILE", help="atlas file to write (.npz)")
    bound_options(export, bound_terms=False)
    export.set_defaults(handler=_cmd_atlas_export)
    show = actions.add_parser("show", parents=[debug_option()], help="list the models of an atlas file (validating it)")
    show.add_argument("file", help="atlas file")
    show.set_defaults(handler=_cmd_atlas_show, prints_result="atlas show")
