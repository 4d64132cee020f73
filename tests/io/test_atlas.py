"""Atlas files: profiles survive export and import bit for bit, and damaged files are refused."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import MakeCheckpoint

from specbound.cli import main
from specbound.core.architecture import Adaptation, Mlp, ModelShape
from specbound.core.bounds import BoundAnalysis
from specbound.core.errors import SpecboundError
from specbound.core.profile import SpectralProfile
from specbound.io.atlas import AtlasError, atlas_member, load_atlas, member_names, read_manifest, save_atlas
from specbound.io.loading import load_profile
from specbound.io.loading import load_profile as load_by_name
from specbound.io.models import Source, atlas_reference, resolve

FIELDS = ("singular_values", "full_dims", "norm_21", "norm_11")


@pytest.fixture
def profiles(make_checkpoint: MakeCheckpoint) -> list[SpectralProfile]:
    return [
        load_profile(str(make_checkpoint(layers=2, hidden=32, heads=4, seed=1))),
        load_profile(str(make_checkpoint(layers=1, hidden=16, heads=2, ffn=24, safe=False, seed=2))),
    ]


def _assert_identical(a: SpectralProfile, b: SpectralProfile) -> None:
    assert (a.model, a.revision, a.shape) == (b.model, b.revision, b.shape)
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()  # bit for bit


def test_round_trip_gives_identical_profiles_and_bound_terms(profiles: list[SpectralProfile], tmp_path: Path) -> None:
    path = save_atlas(profiles, tmp_path / "class.npz")
    loaded = load_atlas(path)
    assert len(loaded) == 2
    for original, imported in zip(profiles, loaded, strict=True):
        _assert_identical(original, imported)
        before, after = BoundAnalysis.from_profile(original), BoundAnalysis.from_profile(imported)
        assert after.log_edelman == before.log_edelman
        np.testing.assert_array_equal(after.log_alpha, before.log_alpha)
        np.testing.assert_array_equal(after.p_opt, before.p_opt)
        for p in (None, 0.0, 0.5, 2.0):
            t0, t1 = before.evaluate(p), after.evaluate(p)
            assert t1.log_total == t0.log_total
            np.testing.assert_array_equal(t1.log_contribution, t0.log_contribution)
            np.testing.assert_array_equal(t1.log_schatten, t0.log_schatten)
    manifest = read_manifest(path)
    assert tuple(e.name for e in manifest.entries) == tuple(p.model for p in profiles)
    assert [e.shape for e in manifest.entries] == [p.shape for p in profiles]
    assert manifest.entries[0].singular_value_width == profiles[0].singular_values.shape[1]
    _assert_identical(atlas_member(path, profiles[1].model), profiles[1])
    with pytest.raises(AtlasError, match="holds no model 'nope'"):
        atlas_member(path, "nope")
    with pytest.raises(AtlasError, match="holds 2 models: name one"):
        atlas_member(path)


def test_an_atlas_model_is_a_model_reference_that_load_profile_opens(
    profiles: list[SpectralProfile], tmp_path: Path
) -> None:
    path = save_atlas(profiles, tmp_path / "with # in name.npz")
    name = atlas_reference(path, profiles[1].model)
    ref = resolve(name)
    assert (ref.source, ref.path, ref.member) == (Source.ATLAS, path.resolve(), profiles[1].model)
    _assert_identical(load_by_name(name), profiles[1])
    single = save_atlas(profiles[:1], tmp_path / "one.npz")
    _assert_identical(load_by_name(f"atlas:{single}"), profiles[0])


def test_the_file_is_a_plain_npz_with_a_json_manifest(profiles: list[SpectralProfile], tmp_path: Path) -> None:
    path = save_atlas(profiles, tmp_path / "a.npz")
    with np.load(path, allow_pickle=False) as data:
        manifest = json.loads(str(data["manifest"]))
        assert manifest["format"] == "specbound-atlas" and manifest["schema"] == 2
        assert [m["name"] for m in manifest["models"]] == [p.model for p in profiles]
        assert manifest["models"][1]["shape"] == ModelShape(1, 16, 2, 24).to_dict()
        assert manifest["models"][1]["shape"]["num_kv_heads"] == 2 and manifest["models"][1]["shape"]["mlp"] == "plain"
        assert data[manifest["models"][0]["arrays"]["singular_values"]].dtype == np.float64


def _rewrite(source: Path, target: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """Copy an atlas archive member by member, letting ``change(name, bytes)`` alter or drop members."""
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w") as zout:
        for item in zin.infolist():
            data = change(item.filename, zin.read(item.filename))
            if data is not None:
                zout.writestr(item.filename, data)
    return target


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def test_damaged_or_foreign_files_are_refused(profiles: list[SpectralProfile], tmp_path: Path) -> None:
    good = save_atlas(profiles, tmp_path / "good.npz")
    not_zip = tmp_path / "text.npz"
    not_zip.write_text("hello, not an atlas")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    single = tmp_path / "single.npy"
    np.save(single, np.arange(3))
    no_array = _rewrite(good, tmp_path / "no_array.npz", lambda name, data: None if name == "m1_norm_11.npy" else data)
    tampered = _rewrite(
        good,
        tmp_path / "tampered.npz",
        lambda name, data: _npy(np.zeros(len(profiles[0].norm_21))) if name == "m0_norm_21.npy" else data,
    )
    wrong_format = _rewrite(
        good,
        tmp_path / "wrong_format.npz",
        lambda name, data: (
            _npy(np.array(json.dumps({"format": "other", "schema": 1}))) if name == "manifest.npy" else data
        ),
    )
    future = _rewrite(
        good,
        tmp_path / "future.npz",
        lambda name, data: (
            _npy(np.array(json.dumps({"format": "specbound-atlas", "schema": 99, "models": []})))
            if name == "manifest.npy"
            else data
        ),
    )
    cases = {
        not_zip: "not a readable .npz",
        truncated: "not a readable .npz",
        foreign: "no manifest",
        single: "single array",
        no_array: "'m1_norm_11' .* is missing",
        tampered: "checksum",
        wrong_format: "format 'specbound-atlas'",
        future: "schema 99",
        tmp_path / "absent.npz": "no atlas file",
    }
    for path, message in cases.items():
        with pytest.raises(AtlasError, match=message):
            load_atlas(path)
    assert issubclass(AtlasError, SpecboundError)


def test_cli_export_and_show(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = make_checkpoint(layers=1, hidden=16, heads=2, ffn=24)
    out = tmp_path / "atlas.npz"
    assert main(["atlas", "export", "--models", str(small), "no-such-model", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no-such-model: missing" in printed and "wrote 1 profile(s)" in printed
    # stored under the folder's name, not this machine's path to it
    _assert_identical(load_atlas(out)[0], dataclasses.replace(load_profile(str(small)), model=small.name))
    assert main(["atlas", "show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "1 model(s)" in shown and shown.splitlines()[2].split()[-1] == small.name  # no folder of this machine
    header, row = shown.splitlines()[1:3]
    assert header.split()[:2] == ["family", "L"] and row.split()[:2] == ["bert", "1"]  # the family of each model
    bad = tmp_path / "bad.npz"
    bad.write_text("x")
    assert main(["atlas", "show", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a specbound atlas" in err[0]


def test_export_names_members_by_their_folders_and_keeps_them_apart(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two checkpoints in folders of the same name keep the parent folder that tells them apart; a Hub-style
    name is stored as it is; no member names the exporting machine's path."""
    first = make_checkpoint(layers=1, hidden=16, heads=2, ffn=24, name="a/run")
    second = make_checkpoint(layers=1, hidden=16, heads=2, ffn=32, name="b/run")
    alone = make_checkpoint(layers=1, hidden=16, heads=2, ffn=40, name="base")
    out = tmp_path / "atlas.npz"
    assert main(["atlas", "export", "--models", str(first), str(second), str(alone), "--out", str(out)]) == 0
    capsys.readouterr()
    names = [profile.model for profile in load_atlas(out)]
    assert names == ["a/run", "b/run", "base"]
    assert [profile.shape.ffn_size for profile in load_atlas(out)] == [24, 32, 40]  # each under its own name
    assert member_names(["/srv/x/m", "/srv/y/m", "/srv/y/n", "owner/model"]) == ["x/m", "y/m", "n", "owner/model"]
    assert member_names(["/a/x/m", "/b/x/m", "/c/y/m"]) == ["a/x/m", "b/x/m", "y/m"]
    assert member_names(["/a/x/m", "x/m", "m"]) == ["/a/x/m", "x/m", "m"]  # nothing shorter is unique
    with pytest.raises(ValueError, match="distinct names"):
        save_atlas(load_atlas(out)[:2], tmp_path / "twice.npz", names=["same", "same"])


def test_an_atlas_of_schema_1_still_opens_as_bert_encoders(tmp_path: Path) -> None:
    """Schema 1 (before other families were read) stored the four sizes of a BERT encoder."""
    from atlas_files import write_atlas

    from specbound.studies.twin import random_twin

    profile = random_twin(ModelShape(2, 16, 2, 24), model="old")

    def as_schema_1(manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        manifest["schema"] = 1
        for model in manifest["models"]:
            model["shape"] = {k: model["shape"][k] for k in ("num_layers", "hidden_size", "num_heads", "ffn_size")}

    path = write_atlas(tmp_path / "old.npz", [profile], as_schema_1)
    (loaded,) = load_atlas(path)
    assert loaded.shape == ModelShape(2, 16, 2, 24)
    np.testing.assert_array_equal(loaded.singular_values, profile.singular_values)


def test_an_atlas_keeps_a_gated_grouped_query_model_whole(tmp_path: Path) -> None:
    from specbound.studies.twin import random_twin

    shape = ModelShape(
        2,
        16,
        4,
        24,
        num_kv_heads=2,
        head_dim=6,
        mlp=Mlp.GATED,
        family="llama",
        activation="silu",
        adaptations=(Adaptation.CAUSAL, Adaptation.ROTARY, Adaptation.GROUPED_QUERY, Adaptation.GATED_MLP),
    )
    profile = random_twin(shape, model="tiny-llama")
    (loaded,) = load_atlas(save_atlas([profile], tmp_path / "llama.npz"))
    assert loaded.shape == shape and loaded.model_kinds[2].value == "M_gate"
    np.testing.assert_array_equal(loaded.singular_values, profile.singular_values)
