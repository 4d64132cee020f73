"""Running the CLI as a user would, and measuring what it cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: A wrapper process whose only child is the command: its RUSAGE_CHILDREN peak is the command's.
_MEASURE = """
import resource, subprocess, sys
result = subprocess.run(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(result.returncode)
"""


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specbound.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)


def run_cli_measured(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                     ) -> tuple[subprocess.CompletedProcess, float]:
    """Run the CLI and return its result and its peak resident memory in MB."""
    report = tmp_path / "peak-rss.txt"
    result = subprocess.run([sys.executable, "-c", _MEASURE, str(report), sys.executable, "-m", "specbound.cli",
                             *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)
    return result, int(report.read_text()) / 1024


def assert_one_line_error(result: subprocess.CompletedProcess, *words: str, status: int = 1) -> str:
    """Exit status, empty stdout, exactly one stderr line without a traceback, containing ``words``."""
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("specbound")
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as RFC 8259 parsers do."""
    def refuse(constant: str):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


# --- hand-made files ------------------------------------------------------------------------------

def write_safetensors(path: Path, header: dict, data: bytes = b"", *, declared_length: int | None = None) -> Path:
    """A safetensors file with exactly this header (8-byte little-endian length, JSON) and data."""
    raw = json.dumps(header).encode()
    length = len(raw) if declared_length is None else declared_length
    path.write_bytes(length.to_bytes(8, "little") + raw + data)
    return path


def write_atlas(path: Path, profiles, edit=None) -> Path:
    """An atlas in the real format whose manifest and arrays ``edit(manifest, arrays)`` may change
    first; the SHA-256 sums are recomputed afterwards, as a careful tamperer would."""
    import hashlib

    import numpy as np

    from specbound.atlas import save_atlas

    save_atlas(profiles, path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    manifest = json.loads(str(arrays.pop("manifest")))
    if edit is not None:
        edit(manifest, arrays)
    for model in manifest["models"]:
        for field, key in model["arrays"].items():
            if key in arrays:
                model["sha256"][field] = hashlib.sha256(np.ascontiguousarray(arrays[key]).tobytes()).hexdigest()
    with open(path, "wb") as f:
        np.savez(f, manifest=np.array(json.dumps(manifest)), **arrays)
    return path


def npy_bytes(array) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def npy_header_only(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """The magic and header of an .npy file declaring ``shape``, followed by no data at all."""
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI in this process (fast): its status and what it wrote, as run_cli reports them."""
    import contextlib
    import io

    from specbound.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            status = exc.code
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def hand_profile(layers: int = 1, hidden: int = 16, heads: int = 2, ffn: int = 24, seed: int = 0, name: str = "hand"):
    """A valid profile with random descending spectra, built without any checkpoint."""
    import numpy as np

    from specbound.matrices import EncoderShape
    from specbound.profile import SpectralProfile, full_dims_of

    shape = EncoderShape(layers, hidden, heads, ffn)
    rng = np.random.default_rng(seed)
    dims = full_dims_of(shape)
    sv = np.zeros((shape.num_matrices, hidden))
    for i, k in enumerate(dims):
        rank = hidden // heads if i % shape.matrices_per_layer < 2 * heads else k
        sv[i, :rank] = np.sort(rng.uniform(0.1, 3.0, rank))[::-1]
    return SpectralProfile(name, "r", shape, sv, dims, rng.uniform(1, 5, len(dims)), rng.uniform(5, 20, len(dims)))
