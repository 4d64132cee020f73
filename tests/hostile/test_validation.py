"""Class 4, trusting what should be checked: one validator for profiles from any origin, checksummed
cache entries, atlases whose SHA-256 sums were recomputed after tampering, stale revision keys."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from atlas_files import write_atlas
from cli_runner import assert_one_line_error, cli
from hostile_helpers import hand_profile
from tiny_models import MakeCheckpoint

from specbound.core.architecture import ModelShape
from specbound.core.profile import SpectralProfile, validate_profile
from specbound.io.atlas import AtlasError, load_atlas, read_manifest
from specbound.io.cache import ProfileCache
from specbound.io.checkpoints import fingerprint
from specbound.io.loading import load_profile


def _with(profile: SpectralProfile, **changes: object) -> dict[str, Any]:
    fields = {f.name: getattr(profile, f.name) for f in dataclasses.fields(SpectralProfile)}
    return {**fields, **changes}


def _sv(profile: SpectralProfile, edit: Callable[[np.ndarray], object]) -> np.ndarray:
    sv = profile.singular_values.copy()
    edit(sv)
    return sv


def _set(array: np.ndarray, index: int | tuple[int, ...], value: object) -> np.ndarray:
    array = array.astype(np.result_type(array, type(value))).copy()
    array[index] = value
    return array


#: name -> profile fields that break exactly one rule
BROKEN: dict[str, Callable[[SpectralProfile], dict[str, Any]]] = {
    "NaN singular value": lambda p: {"singular_values": _sv(p, lambda s: s.__setitem__((0, 0), np.nan))},
    "infinite singular value": lambda p: {"singular_values": _sv(p, lambda s: s.__setitem__((3, 1), np.inf))},
    "negative singular value": lambda p: {"singular_values": _sv(p, lambda s: s.__setitem__((1, 2), -0.5))},
    "increasing row": lambda p: {"singular_values": _sv(p, lambda s: s.__setitem__((2, 1), 99.0))},
    "wider rows than N": lambda p: {"singular_values": np.pad(p.singular_values, ((0, 0), (0, 3)))},
    "too few rows": lambda p: {"singular_values": p.singular_values[:-1]},
    "values beyond min(rows, cols)": lambda p: {"singular_values": _sv(p, lambda s: s.__setitem__((5, 15), 1e-3))},
    "full_dims of 10^12": lambda p: {"full_dims": _set(p.full_dims, 0, 10**12)},
    "negative full_dims": lambda p: {"full_dims": _set(p.full_dims, 2, -16)},
    "full_dims as floats": lambda p: {"full_dims": p.full_dims.astype(float)},
    "NaN norm": lambda p: {"norm_21": _set(p.norm_21, 0, np.nan)},
    "negative norm": lambda p: {"norm_11": _set(p.norm_11, 1, -1.0)},
    "norms of the wrong length": lambda p: {"norm_11": p.norm_11[:-1]},
    "num_layers 2.0": lambda p: {"shape": ModelShape(1.0, 16, 2, 24)},  # type: ignore[arg-type]  # the float refused
    "hidden_size True": lambda p: {"shape": ModelShape(1, 16, True, 24)},
    "integer singular values": lambda p: {"singular_values": p.singular_values.astype(np.int64)},
    "model name not a string": lambda p: {"model": 7},
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_the_validator_refuses_each_broken_rule(case: str) -> None:
    profile = hand_profile(ffn=12)  # d_ff < N: M_in and M_out have min(N, d_ff) = 12 singular values
    with pytest.raises(ValueError):
        SpectralProfile(**_with(profile, **BROKEN[case](profile)))


def test_narrow_rows_are_valid_but_not_full_width() -> None:
    profile = hand_profile()
    narrow = SpectralProfile(**_with(profile, singular_values=profile.singular_values[:, :10].copy()))
    with pytest.raises(ValueError, match="exactly 16"):
        validate_profile(narrow, full_width=True)


# --- the cache ------------------------------------------------------------------------------------


def _rewrite_entry(path: Path, edit: Callable[[dict[str, np.ndarray]], object]) -> None:
    """Change a cache entry's arrays while keeping it a well-formed .npz with the same meta."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    edit(arrays)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


TAMPERED_ENTRIES = {
    "NaN": lambda a: a["singular_values"].__setitem__((0, 0), np.nan),
    "values x1000": lambda a: a.__setitem__("singular_values", a["singular_values"] * 1000),
    "fewer columns": lambda a: a.__setitem__("singular_values", a["singular_values"][:, :8].copy()),
    "norms x2": lambda a: a.__setitem__("norm_21", a["norm_21"] * 2),
    "full_dims changed": lambda a: a.__setitem__("full_dims", a["full_dims"] + 1),
    "float full_dims": lambda a: a.__setitem__("full_dims", a["full_dims"].astype(float)),
    "shape as floats": lambda a: a.__setitem__(
        "meta", np.array(str(a["meta"]).replace('"num_layers": 2', '"num_layers": 2.0'))
    ),
    "extra member": lambda a: a.__setitem__("junk", np.zeros(3)),
}


@pytest.mark.parametrize("case", list(TAMPERED_ENTRIES))
def test_a_tampered_cache_entry_is_recomputed(make_checkpoint: MakeCheckpoint, tmp_path: Path, case: str) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    directory = make_checkpoint()
    good = load_profile(str(directory), cache=cache)
    entry = cache.path(good.model, good.revision)
    _rewrite_entry(entry, TAMPERED_ENTRIES[case])
    assert cache.load(good.model, good.revision) is None
    assert not entry.exists()
    again = load_profile(str(directory), cache=cache)
    np.testing.assert_array_equal(again.singular_values, good.singular_values)
    assert cache.load(good.model, good.revision) is not None


# --- atlases whose checksums were recomputed -----------------------------------------------------


def _edit_sv(edit: Callable[[np.ndarray], object]) -> Callable[[dict[str, Any], dict[str, np.ndarray]], None]:
    def change(manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        edit(arrays["m0_singular_values"])

    return change


TAMPERED_ATLASES = {
    "NaN singular values": (_edit_sv(lambda s: s.__setitem__((0, 0), np.nan)), "finite and non-negative"),
    "full_dims 10^12": (lambda m, a: a["m0_full_dims"].__setitem__(0, 10**12), "full_dims do not match"),
    "negative full_dims": (lambda m, a: a["m0_full_dims"].__setitem__(0, -5), "full_dims do not match"),
    "num_layers 2.0": (lambda m, a: m["models"][0]["shape"].__setitem__("num_layers", 1.0), "not positive integers"),
    "hidden_size as text": (
        lambda m, a: m["models"][0]["shape"].__setitem__("hidden_size", "16"),
        "not positive integers",
    ),
    "schema true": (lambda m, a: m.__setitem__("schema", True), "no schema version"),
    "schema 1.0": (lambda m, a: m.__setitem__("schema", 1.0), "no schema version"),
    "duplicate names": (lambda m, a: m["models"][1].__setitem__("name", m["models"][0]["name"]), "listed twice"),
    "fewer columns": (
        lambda m, a: a.__setitem__("m0_singular_values", a["m0_singular_values"][:, :4].copy()),
        "declared float64 (6, 4)",
    ),
    "increasing values": (_edit_sv(lambda s: s.__setitem__((0, 3), 50.0)), "non-increasing"),
    "name not a string": (lambda m, a: m["models"][0].__setitem__("name", ["x"]), "incomplete"),
    "big-endian floats": (lambda m, a: a.__setitem__("m0_norm_21", a["m0_norm_21"].astype(">f8")), "declared >f8"),
}


@pytest.mark.parametrize("case", list(TAMPERED_ATLASES))
def test_a_tampered_atlas_is_refused_by_loading_and_by_show(tmp_path: Path, case: str) -> None:
    edit, words = TAMPERED_ATLASES[case]
    path = write_atlas(tmp_path / "tampered.npz", [hand_profile(name="a"), hand_profile(seed=1, name="b")], edit)
    with pytest.raises(AtlasError, match=r"tampered\.npz is not a valid specbound atlas") as info:
        load_atlas(path)
    assert words in str(info.value)
    with pytest.raises(AtlasError) as shown:
        read_manifest(path)
    assert str(shown.value) == str(info.value)  # `atlas show` runs exactly the checks of loading
    assert_one_line_error(cli("atlas", "show", str(path)), words)


def test_an_untouched_atlas_passes_both(tmp_path: Path) -> None:
    path = write_atlas(tmp_path / "fine.npz", [hand_profile(name="a"), hand_profile(seed=1, name="b")])
    assert [p.model for p in load_atlas(path)] == ["a", "b"]
    assert cli("atlas", "show", str(path)).returncode == 0


# --- revision keys that follow the content -------------------------------------------------------


def test_cp_p_of_other_weights_is_not_served_stale(make_checkpoint: MakeCheckpoint, tmp_path: Path) -> None:
    cache = ProfileCache(tmp_path / "profiles")
    target = make_checkpoint(seed=1, name="target")
    other = make_checkpoint(seed=2, name="other")
    first = load_profile(str(target), cache=cache)
    weights = target / "model.safetensors"
    stat = weights.stat()
    assert stat.st_size == (other / "model.safetensors").stat().st_size
    shutil.copyfile(other / "model.safetensors", weights)  # other weights, same size ...
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ... and the old mtime, as cp -p can leave
    second = load_profile(str(target), cache=cache)
    assert second.revision != first.revision
    assert not np.array_equal(second.singular_values, first.singular_values)


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_one_changed_byte_with_restored_mtime_is_a_new_revision(make_checkpoint: MakeCheckpoint, where: str) -> None:
    directory = make_checkpoint(hidden=64, heads=4, ffn=256, layers=4)  # large enough to be sampled, not hashed whole
    weights = directory / "model.safetensors"
    before, stat = fingerprint(directory), weights.stat()
    data = bytearray(weights.read_bytes())
    position = {"start": len(data) // 50, "middle": len(data) // 2 + 7, "end": len(data) - 3}[where]
    data[position] ^= 0xFF
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    assert fingerprint(directory) != before
