"""Class 1, small input and huge cost: every size is checked from headers and manifests first.

Each case is a real file built here (a deflate bomb, an .npy header declaring 10^14 values, a
safetensors header that lies, an absurd config.json, a GPT-2 repository on a local Hub) and the
assertion is about what did not happen: no allocation (peak RSS of the process), no download.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from atlas_files import write_atlas
from cli_runner import assert_one_line_error, cli, run_cli, run_cli_measured
from hostile_helpers import hand_profile, npy_bytes, npy_header_only, write_safetensors
from local_hub import COMMIT, LocalHub
from tiny_models import MakeCheckpoint

import specbound
from specbound.core.bounds import BoundSettings
from specbound.core.errors import ModelNotFoundError
from specbound.core.limits import LIMITS
from specbound.core.profile import SpectralProfile
from specbound.io.atlas import AtlasError, load_atlas, read_manifest
from specbound.io.files import NpzArchive

#: A process that imports numpy and specbound stays far below this; one that allocates what a
#: hostile header declares (1 GiB and more) does not.
RSS_CEILING_MB = 400


@pytest.fixture(scope="module")
def profile() -> SpectralProfile:
    return hand_profile()


@pytest.fixture(scope="module")
def deflate_bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 300 MiB member of zeros deflated to about 300 kB, under an atlas member's name."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("manifest.npy", npy_bytes(np.array(json.dumps({"format": "specbound-atlas"}))))
        with archive.open("m0_singular_values.npy", "w", force_zip64=True) as member:
            member.write(npy_header_only((300 * 2**17,)))
            chunk = b"\0" * (16 << 20)
            for _ in range(300 // 16 + 1):
                member.write(chunk)
    assert path.stat().st_size < 2_000_000
    return path


# --- atlas files ----------------------------------------------------------------------------------


def test_a_deflate_bomb_is_refused_from_the_zip_directory(deflate_bomb: Path, tmp_path: Path) -> None:
    result, peak = run_cli_measured(tmp_path, "atlas", "show", str(deflate_bomb))
    assert_one_line_error(result, "bomb.npz is not a valid specbound atlas", "expands to", "above the limit")
    assert peak < RSS_CEILING_MB
    with pytest.raises(AtlasError, match=r"expands to 3\d{8} bytes, above the limit of 268435456"):
        load_atlas(deflate_bomb)  # the loading path runs the same check


@pytest.mark.parametrize("shape", [(10**7, 10**7), (2**40,), (8, 2**61)])
def test_an_npy_header_declaring_a_huge_array_allocates_nothing(
    profile: SpectralProfile, tmp_path: Path, shape: tuple[int, ...]
) -> None:
    path = write_atlas(tmp_path / "huge.npz", [profile])
    rewritten = tmp_path / "rewritten.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(rewritten, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info.filename, npy_header_only(shape) if info.filename == "m0_norm_21.npy" else data)
    result, peak = run_cli_measured(tmp_path, "atlas", "show", str(rewritten))
    assert_one_line_error(result, "rewritten.npz is not a valid specbound atlas", "m0_norm_21")
    assert peak < RSS_CEILING_MB
    with pytest.raises(AtlasError):
        load_atlas(rewritten)


@pytest.mark.parametrize(
    "sizes",
    [
        {"num_layers": 10**6},
        {"hidden_size": 10**7, "num_heads": 1},
        {"ffn_size": 10**9},
        {"num_heads": 10**4, "hidden_size": 10**4},
    ],
)
def test_a_manifest_declaring_absurd_sizes_is_refused_before_its_arrays(
    profile: SpectralProfile, tmp_path: Path, sizes: dict[str, int]
) -> None:
    def edit(manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        manifest["models"][0]["shape"].update(sizes)

    path = write_atlas(tmp_path / "absurd.npz", [profile], edit)
    with pytest.raises(AtlasError, match="above the limit"):
        read_manifest(path)


def test_an_oversized_manifest_member_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "manifest.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.npy", npy_bytes(np.array("x" * (LIMITS.max_manifest_bytes + 1))))
    with pytest.raises(AtlasError, match="manifest"):
        load_atlas(path)


@pytest.mark.parametrize(
    "caps, message",
    [
        ({"max_total_bytes": 1000}, "expand to"),
        ({"max_member_bytes": 100}, "expands to"),
        ({"max_members": 2}, "members"),
        ({"max_file_bytes": 100}, "the file is"),
    ],
)
def test_archive_caps_are_checked_from_the_zip_directory(
    profile: SpectralProfile, tmp_path: Path, caps: dict[str, int], message: str
) -> None:
    path = write_atlas(tmp_path / "ok.npz", [profile])
    limits = {"max_file_bytes": 10**9, "max_total_bytes": 10**9, "max_member_bytes": 10**9, "max_members": 100}
    with pytest.raises(ValueError, match=message):
        NpzArchive(path, **{**limits, **caps})


# --- checkpoints ----------------------------------------------------------------------------------


def test_a_wrong_shape_tensor_is_refused_from_the_header_before_conversion(
    make_checkpoint: MakeCheckpoint, tmp_path: Path
) -> None:
    """A 128 MB uint8 tensor where a (48, 32) weight belongs: float64 would be 1 GB."""
    from safetensors.numpy import load_file, save_file

    directory = make_checkpoint()
    state = load_file(str(directory / "model.safetensors"))
    state["encoder.layer.0.intermediate.dense.weight"] = np.ones((128, 2**20), dtype=np.uint8)
    save_file(state, str(directory / "model.safetensors"))
    result, peak = run_cli_measured(tmp_path, "analyze", str(directory), "--json", "--no-cache")
    assert_one_line_error(
        result, "'encoder.layer.0.intermediate.dense.weight' has shape (128, 1048576)", "implies (48, 32)"
    )
    assert peak < RSS_CEILING_MB + 150  # torch and safetensors are imported; 128 MB are mapped, not copied


@pytest.mark.parametrize("dtype, words", [("U8", "dtype U8"), ("I64", "dtype I64"), ("BOOL", "dtype BOOL")])
def test_a_weight_of_an_integer_dtype_is_refused_from_the_header(
    make_checkpoint: MakeCheckpoint, dtype: str, words: str
) -> None:
    from safetensors.numpy import load_file, save_file

    directory = make_checkpoint()
    state = load_file(str(directory / "model.safetensors"))
    numpy_dtype = {"U8": np.uint8, "I64": np.int64, "BOOL": np.bool_}[dtype]
    state["encoder.layer.1.output.dense.weight"] = np.zeros((32, 48), dtype=numpy_dtype)
    save_file(state, str(directory / "model.safetensors"))
    assert_one_line_error(cli("analyze", str(directory), "--no-cache"), words, "not a floating-point type")


@pytest.mark.parametrize(
    "header, declared, words",
    [
        ({}, 2**40, ["declares a header of 1099511627776 bytes", "above the limit"]),
        ({}, 10**6, ["header longer than the file"]),
        (
            {"w": {"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 4 * 10**12]}},
            None,
            ["tensor w does not fit the file"],
        ),
        ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, None, ["tensor w does not fit the file"]),
        ({"w": {"dtype": "F32", "shape": [-1, 2], "data_offsets": [0, 8]}}, None, ["malformed entry for tensor w"]),
        ({"w": {"dtype": "X99", "shape": [1], "data_offsets": [0, 4]}}, None, ["tensor w does not fit the file"]),
        ({"w": "nonsense"}, None, ["malformed entry"]),
    ],
)
def test_lying_safetensors_headers_are_refused(
    make_checkpoint: MakeCheckpoint, header: dict[str, Any], declared: int | None, words: list[str]
) -> None:
    directory = make_checkpoint()
    write_safetensors(directory / "model.safetensors", header, b"\0" * 4, declared_length=declared)
    assert_one_line_error(cli("analyze", str(directory), "--no-cache"), *words)


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"num_hidden_layers": 10**9}, ["num_layers = 1000000000", "above the limit of 96"]),
        ({"hidden_size": 10**6, "num_attention_heads": 1}, ["hidden_size = 1000000"]),
        ({"intermediate_size": 10**12}, ["ffn_size = 1000000000000"]),
        ({"num_attention_heads": 512, "hidden_size": 1024}, ["num_heads = 512"]),
        ({"model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64, "head_dim": 2048}, ["GiB in float64"]),
        ({"num_hidden_layers": 96, "num_attention_heads": 256, "hidden_size": 4096}, ["spectral profile of"]),
    ],
)
def test_absurd_config_sizes_are_refused_before_any_weight_is_read(
    make_checkpoint: MakeCheckpoint, changes: dict[str, int], words: list[str]
) -> None:
    directory = make_checkpoint()
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, **changes}))
    (directory / "model.safetensors").write_bytes(b"garbage that is never read")
    assert_one_line_error(cli("analyze", str(directory)), *words)


def test_an_oversized_config_is_not_read_whole(make_checkpoint: MakeCheckpoint) -> None:
    directory = make_checkpoint()
    (directory / "config.json").write_text('{"model_type": "bert", "pad": "' + "x" * LIMITS.max_config_bytes + '"}')
    assert_one_line_error(cli("analyze", str(directory)), "is larger than 1048576 bytes")


# --- options ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--grid-m", "1000000000"],
        ["--grid-m", "1001"],
        ["--grid-m", "1e3"],
        ["--grid-m", "9" * 5000],
        ["--l-phi", "1e300"],
        ["--l-phi", "inf"],
        ["--p", "1e308"],
    ],
)
def test_numeric_options_have_upper_bounds(args: list[str]) -> None:
    assert_one_line_error(cli("analyze", "minilm-l6", *args), "error: argument", status=2)


@pytest.mark.parametrize(
    "settings",
    [
        {"grid_m": 10**9},
        {"grid_m": 1001},
        {"grid_m": True},
        {"grid_m": 2.0},
        {"l_phi": 1e300},
        {"l_phi": float("nan")},
        {"l_phi": True},  # a bool is not a Lipschitz constant (it was read as 1)
        {"l_phi": "1.13"},
        {"l_phi": 10**20},  # a whole number beyond 2^63: refused as too large, not a TypeError from numpy
        {"l_phi": 10**400},  # beyond float64's range
    ],
)
def test_bound_settings_enforce_the_same_bounds(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        BoundSettings(**settings)


def test_analyze_refuses_a_whole_number_beyond_64_bits_as_any_other_too_large_l_phi(
    make_checkpoint: MakeCheckpoint,
) -> None:
    with pytest.raises(ValueError, match="L_phi must be a positive number of at most"):
        specbound.analyze(str(make_checkpoint()), l_phi=10**20, use_cache=False)


def test_the_largest_grid_is_allowed_and_cheap(make_checkpoint: MakeCheckpoint) -> None:
    result = cli("analyze", str(make_checkpoint()), "--json", "--grid-m", str(LIMITS.max_grid_m))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["grid_m"] == 1000


# --- the Hub: config first, size from metadata, a cap --------------------------------------------


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LocalHub]:
    with LocalHub(tmp_path / "hub") as running:
        yield running


def hub_env(hub: LocalHub, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp_path / "hf"),
        "SPECBOUND_CACHE": str(tmp_path / "profiles"),
        **extra,
    }
    os.environ.pop("HF_HUB_OFFLINE", None)
    return env


def downloaded(tmp_path: Path, repo_id: str) -> list[str]:
    snapshot = tmp_path / "hf" / "hub" / f"models--{repo_id.replace('/', '--')}" / "snapshots" / COMMIT
    return sorted(p.name for p in snapshot.iterdir()) if snapshot.is_dir() else []


def _sharded(directory: Path, shards: int) -> dict[str, bytes]:
    """Files of a checkpoint split into ``shards`` safetensors shards with an index."""
    from safetensors.numpy import load_file, save_file

    state = load_file(str(directory / "model.safetensors"))
    names = sorted(state)
    files, weight_map = {}, {}
    for i in range(shards):
        shard = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: state[n] for n in names[i::shards]}
        save_file(part, str(directory / shard))
        files[shard] = (directory / shard).read_bytes()
        (directory / shard).unlink()
        weight_map.update({n: shard for n in part})
    files["model.safetensors.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    (directory / "model.safetensors").unlink()
    return files


def test_an_unsupported_family_costs_one_config_download(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint
) -> None:
    source = make_checkpoint(name="xlnet")
    files = _sharded(source, 20)
    config = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**config, "model_type": "xlnet"}))
    hub.add("someone/xlnet-sharded", source, extra_files=files)
    result = run_cli("analyze", "someone/xlnet-sharded", env=hub_env(hub, tmp_path))
    assert_one_line_error(result, "model type 'xlnet' is not supported", "supported families:")
    assert downloaded(tmp_path, "someone/xlnet-sharded") == ["config.json"]


def test_a_config_with_absurd_sizes_stops_before_the_weights(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint
) -> None:
    source = make_checkpoint(name="big")
    config = json.loads((source / "config.json").read_text())
    (source / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 5000}))
    hub.add("someone/too-deep", source)
    assert_one_line_error(run_cli("analyze", "someone/too-deep", env=hub_env(hub, tmp_path)), "above the limit")
    assert downloaded(tmp_path, "someone/too-deep") == ["config.json"]


@pytest.mark.parametrize("shards", [1, 3])
def test_a_download_above_the_cap_is_refused_before_any_weight(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint, shards: int
) -> None:
    source = make_checkpoint(name=f"capped{shards}")
    extra = _sharded(source, shards) if shards > 1 else None
    repo = hub.add(f"someone/capped-{shards}", source, extra_files=extra)
    weights = sum(p.stat().st_size for p in repo.iterdir() if p.name.endswith(".safetensors"))
    env = hub_env(hub, tmp_path, SPECBOUND_MAX_DOWNLOAD_MB=str(weights / 2e6))
    result = run_cli("analyze", f"someone/capped-{shards}", env=env)
    assert_one_line_error(result, f"needs {weights / 1e6:,.0f} MB of weights", "SPECBOUND_MAX_DOWNLOAD_MB")
    assert all(not n.endswith(".safetensors") for n in downloaded(tmp_path, f"someone/capped-{shards}"))

    # the dashboard's question: how large would it be? (no weight is fetched to answer it)
    script = (
        "import json; from specbound.io.checkpoints import download_plan; from specbound.io.models import resolve; "
        f"plan = download_plan(resolve('someone/capped-{shards}')); "
        "print(json.dumps([plan.total_bytes, plan.within_cap, [f for f, _ in plan.files]]))"
    )
    answer = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )
    total, within, names = json.loads(answer.stdout)
    assert (total, within, len(names)) == (weights, False, shards)

    # with the cap raised, the same model downloads and analyses
    env["SPECBOUND_MAX_DOWNLOAD_MB"] = str(weights / 1e6 + 1)
    assert run_cli("analyze", f"someone/capped-{shards}", "--json", env=env).returncode == 0


@pytest.mark.parametrize("value", ["lots", "-5", "nan"])
def test_a_malformed_download_cap_is_one_line(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint, value: str
) -> None:
    hub.add("someone/tiny", make_checkpoint(name="t"))
    result = run_cli("analyze", "someone/tiny", env=hub_env(hub, tmp_path, SPECBOUND_MAX_DOWNLOAD_MB=value))
    assert_one_line_error(result, "SPECBOUND_MAX_DOWNLOAD_MB must be")


def test_download_cap_default_and_a_local_model_has_nothing_to_download(
    monkeypatch: pytest.MonkeyPatch, make_checkpoint: MakeCheckpoint
) -> None:
    from specbound.core.limits import DEFAULT_MAX_DOWNLOAD_MB, max_download_bytes
    from specbound.io.checkpoints import download_plan
    from specbound.io.models import resolve

    monkeypatch.delenv("SPECBOUND_MAX_DOWNLOAD_MB", raising=False)
    assert max_download_bytes() == DEFAULT_MAX_DOWNLOAD_MB * 10**6
    monkeypatch.setenv("SPECBOUND_MAX_DOWNLOAD_MB", "2.5")
    assert max_download_bytes() == 2_500_000
    with pytest.raises(ModelNotFoundError, match="is not a Hub model: nothing to download"):
        download_plan(resolve(str(make_checkpoint())))
