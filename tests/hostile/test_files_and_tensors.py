"""Hostile files, the package side: tensors of every kind (class 1), finite but huge weights (class 2),
special files wherever a file is read (class 3), names taken exactly (class 4) and library errors of
the atlas reader (class 7). Checkpoints are real: ``save_pretrained`` or ``torch.save``."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from atlas_files import write_atlas
from cli_runner import assert_one_line_error, cli, run_cli
from hostile_helpers import hand_profile
from tiny_models import MakeCheckpoint

from specbound.core.errors import SpecboundError
from specbound.core.limits import LIMITS, derived_max_abs_weight
from specbound.io.atlas import AtlasError, load_atlas, save_atlas
from specbound.io.files import NotRegularFileError, read_json
from specbound.io.loading import load_profile

# --- class 1: tensors that are not plain dense arrays ------------------------------------------------


def _pickled(directory: Path, edit: Callable[[dict[str, torch.Tensor]], object]) -> Path:
    """Rewrite the checkpoint's pytorch_model.bin after ``edit(state)``; returns the directory."""
    import torch

    state = torch.load(directory / "pytorch_model.bin", weights_only=True)
    edit(state)
    torch.save(state, directory / "pytorch_model.bin")
    return directory


if TYPE_CHECKING:
    import torch

QUERY = "encoder.layer.0.attention.self.query.weight"


def _parameters(state: dict[str, torch.Tensor]) -> None:
    import torch

    for name in list(state):
        state[name] = torch.nn.Parameter(state[name].clone())  # requires grad


@pytest.mark.parametrize(
    "convert",
    [
        _parameters,
        lambda s: s.update({QUERY: s[QUERY].to_sparse()}),
        lambda s: s.update({QUERY: s[QUERY].to_sparse_csr()}),
        lambda s: s.update({QUERY: s[QUERY].to_sparse_csc()}),
        lambda s: s.update({QUERY: s[QUERY].t().contiguous().t()}),  # a transposed (column-major) view
        lambda s: s.update({QUERY: s[QUERY].to(__import__("torch").bfloat16)}),
    ],
    ids=["nn.Parameter", "sparse coo", "sparse csr", "sparse csc", "column-major", "bfloat16"],
)
def test_every_dense_equivalent_tensor_kind_analyses_like_the_plain_one(
    make_checkpoint: MakeCheckpoint,
    convert: Callable[[dict[str, torch.Tensor]], object],
    request: pytest.FixtureRequest,
) -> None:
    import torch

    plain = make_checkpoint(safe=False, name="plain")
    reference = load_profile(str(plain), use_cache=False)
    other = make_checkpoint(safe=False, name="other")
    _pickled(other, convert)
    profile = load_profile(str(other), use_cache=False)
    if request.node.callspec.id == "bfloat16":  # rounded weights: close, not equal
        assert np.allclose(profile.singular_values, reference.singular_values, rtol=2e-2, atol=1e-3)
    else:
        np.testing.assert_allclose(profile.singular_values, reference.singular_values, rtol=1e-12, atol=1e-14)
    state = torch.load(other / "pytorch_model.bin", weights_only=True)
    assert isinstance(state[QUERY], torch.Tensor)


def test_a_state_dict_of_parameters_in_a_real_process_gives_its_json(make_checkpoint: MakeCheckpoint) -> None:
    directory = _pickled(make_checkpoint(safe=False), _parameters)
    result = run_cli("analyze", str(directory), "--json", "--no-cache")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["num_layers"] == 2


@pytest.mark.parametrize(
    "tensor, words",
    [
        (lambda t: __import__("torch").quantize_per_tensor(t, 0.1, 0, __import__("torch").qint8), ["dtype", "qint8"]),
        (lambda t: t.to(__import__("torch").complex64), ["dtype", "complex64", "not a floating-point type"]),
        (lambda t: t.to(__import__("torch").float8_e4m3fn), ["dtype", "float8", "not a floating-point type"]),
        (lambda t: t.to_sparse().coalesce().values(), ["has shape"]),
        (lambda t: [t], ["has shape ()"]),
    ],
    ids=["quantized", "complex", "float8", "sparse values only", "a list"],
)
def test_tensor_kinds_without_a_float_matrix_get_one_line(
    make_checkpoint: MakeCheckpoint, tensor: Callable[[torch.Tensor], torch.Tensor], words: list[str]
) -> None:
    directory = make_checkpoint(safe=False)
    _pickled(directory, lambda s: s.update({QUERY: tensor(s[QUERY])}))
    line = assert_one_line_error(cli("analyze", str(directory), "--no-cache"), *words)
    assert "internal error" not in line


# --- class 2: finite but huge weights ----------------------------------------------------------------


def _scaled_bert(make_checkpoint: MakeCheckpoint, value: float, *, heads: int = 1, name: str) -> Path:
    """A tiny BERT (save_pretrained) whose every encoder weight matrix is filled with ``value``:
    rank-one matrices of equal entries make every sum in the norms as large as it can be."""
    import torch
    from safetensors.torch import load_file, save_file

    directory = make_checkpoint(heads=heads, name=name)
    state = load_file(directory / "model.safetensors")
    for key, tensor in state.items():
        if key.startswith("encoder.layer.") and key.endswith("weight") and tensor.dim() == 2:
            state[key] = torch.full(tensor.shape, value, dtype=torch.float64)
    save_file(state, directory / "model.safetensors", metadata={"format": "pt"})
    return directory


def test_the_weight_cap_is_what_float64_carries_for_the_largest_shapes() -> None:
    cap, n = LIMITS.max_abs_weight, LIMITS.max_hidden_size
    assert cap == derived_max_abs_weight() == 1e71
    largest = float(np.finfo(np.float64).max)
    # the largest intermediate: ||QK||_F^2 <= (d N w^2)^2 with d = N (one head), and N d_ff w^2 for M
    assert (float(n) ** 2 * cap**2) ** 2 < largest / 2**16
    assert float(n) * LIMITS.max_ffn_size * cap**2 < largest
    assert (float(n) ** 2 * (10 * cap) ** 2) ** 2 > largest / 2**16  # a decade more would not be safe


@pytest.mark.parametrize("heads", [1, 4])
def test_weights_just_under_the_cap_analyse_and_just_over_get_its_message(
    make_checkpoint: MakeCheckpoint, heads: int
) -> None:
    cap = LIMITS.max_abs_weight
    under = _scaled_bert(make_checkpoint, 0.999 * cap, heads=heads, name=f"under-{heads}")
    result = cli("analyze", str(under), "--json", "--no-cache")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert all(np.isfinite(m["frobenius_norm"]) and np.isfinite(m["stable_rank"]) for m in out["matrices"])
    assert out["proxies"]["ours_log10"] > 0
    over = _scaled_bert(make_checkpoint, 1.001 * cap, heads=heads, name=f"over-{heads}")
    assert_one_line_error(cli("analyze", str(over), "--no-cache"), "too large to analyse", "at most 1e+71")


@pytest.mark.parametrize("value", [1e80, -1e80, 1e72, 1e300])
def test_huge_finite_weights_of_the_first_round_examples_get_the_cap_message(
    make_checkpoint: MakeCheckpoint, value: float
) -> None:
    directory = _scaled_bert(make_checkpoint, value, name="huge")
    line = assert_one_line_error(cli("analyze", str(directory), "--no-cache"), "too large to analyse")
    assert "internal error" not in line


# --- class 3: special files ----------------------------------------------------------------------------


def _fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def _run_without_hanging(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in a real process with a deadline: a FIFO read would block it forever."""
    return run_cli(*args, env=env, timeout=60)


@pytest.mark.parametrize(
    "spoil, words",
    [
        (lambda d: _fifo(d / "model.safetensors"), ["model.safetensors", "named pipe (FIFO)", "not a regular file"]),
        (lambda d: _fifo(d / "config.json"), ["config.json"]),
        (
            lambda d: (
                (d / "model.safetensors").rename(d / "model-1.safetensors"),
                (d / "model.safetensors.index.json").write_text(
                    json.dumps({"weight_map": {QUERY: "model-1.safetensors", "x": "model-2.safetensors"}})
                ),
                _fifo(d / "model-2.safetensors"),
            ),
            ["model-2.safetensors", "named pipe (FIFO)"],
        ),
        (
            lambda d: ((d / "model.safetensors").unlink(), _fifo(d / "model.safetensors.index.json")),
            ["model.safetensors.index.json", "named pipe"],
        ),
        (lambda d: ((d / "model.safetensors").unlink(), _fifo(d / "pytorch_model.bin")), ["pytorch_model.bin"]),
        (
            lambda d: ((d / "model.safetensors").unlink(), (d / "model.safetensors").symlink_to("/dev/zero")),
            ["model.safetensors", "device"],
        ),
        (
            lambda d: ((d / "model.safetensors").unlink(), (d / "model.safetensors").mkdir()),
            ["model.safetensors", "directory"],
        ),
    ],
    ids=["fifo weights", "fifo config", "fifo shard", "fifo index", "fifo pickle", "link to /dev/zero", "a directory"],
)
def test_special_files_in_a_checkpoint_are_refused_without_hanging(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, spoil: Callable[[Path], object], words: list[str]
) -> None:
    directory = make_checkpoint()
    spoil(directory)
    result = _run_without_hanging("analyze", str(directory))
    line = assert_one_line_error(result, *words)
    assert str(tmp_path) not in line


def test_a_shard_linked_to_a_device_outside_the_directory_is_never_opened(make_checkpoint: MakeCheckpoint) -> None:
    """/dev/zero is outside the directory: refused as such, never opened."""
    directory = make_checkpoint()
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {QUERY: "zero"}}))
    (directory / "model.safetensors").unlink()
    (directory / "zero").symlink_to("/dev/zero")
    assert_one_line_error(_run_without_hanging("analyze", str(directory)), "outside the checkpoint directory")


def test_an_atlas_that_is_a_fifo_or_a_device(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "class.npz")
    with pytest.raises(AtlasError, match="named pipe"):
        load_atlas(fifo)
    assert_one_line_error(_run_without_hanging("atlas", "show", str(fifo)), "class.npz", "named pipe")
    device = tmp_path / "zero.npz"
    device.symlink_to("/dev/zero")
    assert_one_line_error(_run_without_hanging("analyze", f"atlas:{device}"), "device", "not a regular file")


def test_json_readers_take_regular_files_only(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFileError, match="named pipe"):
        read_json(_fifo(tmp_path / "config.json"), "config.json", 100)
    with pytest.raises(NotRegularFileError, match="device"):
        read_json(Path("/dev/zero"), "zero", 100)
    with pytest.raises(NotRegularFileError, match="directory"):
        read_json(tmp_path, "here", 100)


# --- class 4: names taken exactly ------------------------------------------------------------------------


def test_a_directory_name_with_a_trailing_space_is_not_its_stripped_twin(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    real = make_checkpoint(name="dir")
    line = assert_one_line_error(cli("analyze", f"{real} ", "--json"), "white space")
    assert "'" in line
    spaced = make_checkpoint(name="spaced ", heads=2)  # a directory whose name ends with a space
    result = cli("analyze", str(spaced), "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["num_heads"] == 2
    result = cli("analyze", f" {real}", "--json")
    assert result.returncode == 1 and "white space" in result.stderr


def test_catalog_names_still_ignore_surrounding_space() -> None:
    from specbound.io.models import resolve

    assert resolve(" minilm-l6 ").name == "minilm-l6"
    assert resolve("L4-H256 ").name == "L4-H256"
    with pytest.raises(SpecboundError, match="white space"):
        resolve("google/bert_uncased_L-2_H-128_A-2 ")


@pytest.mark.parametrize("where", ["atlas", "cache"])
def test_a_tilde_user_without_a_home_is_one_line(tmp_path: Path, where: str) -> None:
    nobody = "~no-such-user-specbound"
    if where == "atlas":
        result = run_cli("analyze", f"atlas:{nobody}/class.npz#m")
        words = ["no-such-user-specbound", "no home directory"]
    else:
        result = run_cli("analyze", "minilm-l6", env={"SPECBOUND_CACHE": f"{nobody}/cache"})
        words = ["SPECBOUND_CACHE", "no home directory"]
    assert_one_line_error(result, *words)


def test_a_model_name_with_a_hash_opens_again_from_its_atlas(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    directory = make_checkpoint(name="run#3")
    atlas = tmp_path / "with#hash.npz"
    assert cli("atlas", "export", "--models", str(directory), "--out", str(atlas)).returncode == 0
    result = cli("analyze", f"atlas:{atlas}#{directory.name}", "--json")  # stored under its folder's name
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"] == directory.name == "run#3"
    only = cli("analyze", f"atlas:{atlas}", "--json")  # the atlas's only model
    assert only.returncode == 0 and json.loads(only.stdout)["model"] == directory.name
    assert_one_line_error(cli("analyze", f"atlas:{atlas}#other#name"), "holds no model", "other#name")


def test_hand_profiles_with_hashes_in_names_round_trip(tmp_path: Path) -> None:
    names = ["a#b", "#lead", "trail#", "x##y"]
    path = save_atlas([hand_profile(name=n, seed=i) for i, n in enumerate(names)], tmp_path / "h.npz")
    for name in names:
        result = cli("analyze", f"atlas:{path}#{name}", "--json")
        assert result.returncode == 0, (name, result.stderr)
        assert json.loads(result.stdout)["model"] == name


# --- class 7: errors that are not the module's own ---------------------------------------------------------


def _rewrite_members(source: Path, target: Path, *, flag_bits: int = 0, compress_type: int | None = None) -> Path:
    """A copy of an atlas whose members carry other zip flags or a damaged compressed stream."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            new = zipfile.ZipInfo(info.filename, info.date_time)
            new.compress_type = compress_type if compress_type is not None else info.compress_type
            zout.writestr(new, data)
    if flag_bits:
        raw = bytearray(target.read_bytes())
        for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers
            start = 0
            while (at := raw.find(signature, start)) >= 0:
                raw[at + offset] |= flag_bits
                start = at + 4
        target.write_bytes(bytes(raw))
    return target


@pytest.mark.parametrize(
    "spoil, words",
    [
        (lambda src, dst: _rewrite_members(src, dst, flag_bits=0x1), ["encrypted"]),
        (
            lambda src, dst: _corrupt_deflate(_rewrite_members(src, dst, compress_type=zipfile.ZIP_DEFLATED)),
            ["not a valid specbound atlas"],
        ),
        (lambda src, dst: _rewrite_members(src, dst, compress_type=zipfile.ZIP_BZIP2), ["atlas"]),
        (lambda src, dst: _rewrite_members(src, dst, compress_type=zipfile.ZIP_LZMA), ["atlas"]),
    ],
    ids=["encrypted member", "corrupt deflate stream", "bzip2 members", "lzma members"],
)
def test_library_errors_of_the_atlas_reader_are_atlas_errors(
    tmp_path: Path, spoil: Callable[[Path, Path], Path], words: list[str]
) -> None:
    source = save_atlas([hand_profile()], tmp_path / "good.npz")
    damaged = spoil(source, tmp_path / "damaged.npz")
    try:
        load_atlas(damaged)  # bzip2 and lzma are readable: they may load; what they must not do is crash
    except AtlasError as exc:
        assert all(w in str(exc) for w in words), str(exc)
    result = cli("atlas", "show", str(damaged))
    assert "internal error" not in result.stderr
    assert result.returncode in (0, 1)


def _corrupt_deflate(path: Path) -> Path:
    """Flip bytes inside every compressed member's data (its sizes and CRC stay as declared)."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
            for i in range(start + 2, start + min(info.compress_size, 40)):
                raw[i] ^= 0x5A
    path.write_bytes(bytes(raw))
    return path


def test_an_encrypted_atlas_member_is_one_line_in_a_real_process(tmp_path: Path) -> None:
    source = write_atlas(tmp_path / "good.npz", [hand_profile()])
    damaged = _rewrite_members(source, tmp_path / "locked.npz", flag_bits=0x1)
    result = run_cli("atlas", "show", str(damaged))
    assert_one_line_error(result, "locked.npz", "encrypted")
    result = run_cli("analyze", f"atlas:{damaged}", "--json")
    assert_one_line_error(result, "encrypted")


def test_readers_never_raise_foreign_exceptions_on_random_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    good = save_atlas([hand_profile()], tmp_path / "good.npz").read_bytes()
    for trial in range(40):
        raw = bytearray(good)
        for i in rng.integers(0, len(raw), size=8):
            raw[i] = int(rng.integers(0, 256))
        path = tmp_path / f"fuzz-{trial}.npz"
        path.write_bytes(bytes(raw))
        with contextlib.suppress(AtlasError):  # anything else (zlib.error, RuntimeError, ...) fails the test
            load_atlas(path)
