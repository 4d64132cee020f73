"""The command line: the JSON interface of SPEC §5 field for field, human output, models, export, errors."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from bad_checkpoints import BAD_CHECKPOINTS, edit_weights
from cli_runner import cli, run_cli, run_main
from tiny_models import MakeCheckpoint

import specbound
from specbound.cli import main

NUMBER = float
#: A JSON object's keys and the Python types its values may have (isinstance's second argument).
Schema = dict[str, type | tuple[type, ...]]
TOP_LEVEL: Schema = {
    "model": str,
    "num_layers": int,
    "hidden_size": int,
    "num_heads": int,
    "head_dim": int,
    "ffn_size": int,
    "l_phi": NUMBER,
    "grid_m": int,
    "proxies": dict,
    "log10_alpha": list,
    "matrices": list,
    # SPEC §11
    "family": str,
    "num_kv_heads": int,
    "mlp": str,
    "residual": str,
    "activation": str,
    "adaptations": list,
}
PROXIES: Schema = {
    "ours": NUMBER,
    "ours_log10": NUMBER,
    "edelman": NUMBER,
    "edelman_log10": NUMBER,
    "at_p": (NUMBER, type(None)),
    "at_p_log10": (NUMBER, type(None)),
}
MATRIX: Schema = {
    "layer": int,
    "head": (int, type(None)),
    "kind": str,
    "rank": int,
    "spectral_norm": NUMBER,
    "frobenius_norm": NUMBER,
    "nuclear_norm": NUMBER,
    "norm_21": NUMBER,
    "norm_11": NUMBER,
    "stable_rank": NUMBER,
    "gamma": NUMBER,
    "log10_scale": NUMBER,
    "p_opt": NUMBER,
    "contribution": NUMBER,
    "contribution_at_p": (NUMBER, type(None)),
}


def assert_types(obj: dict[str, Any], schema: Schema, where: str) -> None:
    assert set(obj) == set(schema), where
    for key, expected in schema.items():
        value = obj[key]
        assert not isinstance(value, bool), f"{where}.{key}"
        assert isinstance(value, expected), f"{where}.{key} is {type(value).__name__}"


@pytest.fixture(scope="module")
def minilm_json() -> tuple[dict[str, Any], dict[str, Any]]:
    """`analyze minilm-l6 --json` without and with --p 1 (the profile cache makes the second cheap)."""
    return json.loads(run_main("analyze", "minilm-l6", "--json")), json.loads(
        run_main("analyze", "minilm-l6", "--json", "--p", "1")
    )


def expected_order(layers: int, heads: int) -> list[tuple[int, int | None, str]]:
    order: list[tuple[int, int | None, str]] = []
    for layer in range(layers):
        order += [(layer, h, "QK") for h in range(heads)] + [(layer, h, "V") for h in range(heads)]
        order += [(layer, None, "M_in"), (layer, None, "M_out")]
    return order


# --- analyze --json (SPEC §5) ---------------------------------------------------------------------


def test_analyze_json_matches_the_interface(minilm_json: tuple[dict[str, Any], dict[str, Any]]) -> None:
    out, _ = minilm_json
    assert_types(out, TOP_LEVEL, "top")
    assert_types(out["proxies"], PROXIES, "proxies")
    assert (
        out["model"],
        out["num_layers"],
        out["hidden_size"],
        out["num_heads"],
        out["head_dim"],
        out["ffn_size"],
    ) == ("minilm-l6", 6, 384, 12, 32, 1536)
    assert out["l_phi"] == 1.13
    assert out["grid_m"] == math.ceil(6 + math.log(384)) == 12
    assert out["proxies"]["at_p"] is None and out["proxies"]["at_p_log10"] is None

    assert len(out["log10_alpha"]) == 6 and all(type(v) is float for v in out["log10_alpha"])
    assert out["log10_alpha"][-1] == 0.0
    assert all(a > b for a, b in itertools.pairwise(out["log10_alpha"]))  # trained: every f > 1

    matrices = out["matrices"]
    assert len(matrices) == 156
    for i, m in enumerate(matrices):
        assert_types(m, MATRIX, f"matrices[{i}]")
        assert m["contribution_at_p"] is None
    assert [(m["layer"], m["head"], m["kind"]) for m in matrices] == expected_order(6, 12)
    assert {m["rank"] for m in matrices if m["kind"] in ("QK", "V")} == {32}
    assert {m["rank"] for m in matrices if m["kind"] in ("M_in", "M_out")} == {384}

    grid = np.arange(25) / 12
    for m in matrices:
        assert np.min(np.abs(grid - m["p_opt"])) < 1e-12
        assert m["spectral_norm"] <= m["frobenius_norm"] <= m["nuclear_norm"]
        assert m["stable_rank"] == pytest.approx(m["frobenius_norm"] ** 2 / m["spectral_norm"] ** 2, rel=1e-12)
        assert 1.0 <= m["stable_rank"] <= m["rank"]

    proxies = out["proxies"]
    total = sum(m["contribution"] for m in matrices) + math.sqrt(6)
    assert proxies["ours"] == pytest.approx(total, rel=1e-12)
    assert proxies["ours_log10"] == pytest.approx(math.log10(proxies["ours"]), rel=1e-12)
    assert proxies["edelman_log10"] == pytest.approx(math.log10(proxies["edelman"]), rel=1e-12)
    assert proxies["edelman"] > proxies["ours"]


def test_analyze_json_with_p(minilm_json: tuple[dict[str, Any], dict[str, Any]]) -> None:
    plain, at_one = minilm_json
    assert_types(at_one["proxies"], PROXIES, "proxies")
    proxies = at_one["proxies"]
    assert type(proxies["at_p"]) is float and type(proxies["at_p_log10"]) is float
    assert {k: v for k, v in at_one.items() if k != "proxies" and k != "matrices"} == {
        k: v for k, v in plain.items() if k != "proxies" and k != "matrices"
    }
    for key in ("ours", "ours_log10", "edelman", "edelman_log10"):
        assert proxies[key] == plain["proxies"][key]

    N = 384
    for with_p, without in zip(at_one["matrices"], plain["matrices"], strict=True):
        assert {k: v for k, v in with_p.items() if k != "contribution_at_p"} == {
            k: v for k, v in without.items() if k != "contribution_at_p"
        }
        # p = 1: c = (||W||_* s_W)^(1/3) N^(2/3)
        scale = 10.0 ** with_p["log10_scale"]
        expected = (with_p["nuclear_norm"] * scale) ** (1 / 3) * N ** (2 / 3)
        assert with_p["contribution_at_p"] == pytest.approx(expected, rel=1e-9)
        assert with_p["contribution_at_p"] >= with_p["contribution"] * (1 - 1e-12) or with_p["p_opt"] == 1.0
    total = sum(m["contribution_at_p"] for m in at_one["matrices"]) + math.sqrt(6)
    assert proxies["at_p"] == pytest.approx(total, rel=1e-12)
    assert proxies["at_p_log10"] == pytest.approx(math.log10(total), rel=1e-12)


def test_analyze_json_at_p_zero_counts_rank() -> None:
    out = json.loads(run_main("analyze", "minilm-l6", "--json", "--p", "0"))
    for m in out["matrices"]:
        assert m["contribution_at_p"] == pytest.approx(math.sqrt(m["rank"] * 384), rel=1e-12)
    expected = 144 * math.sqrt(32 * 384) + 12 * math.sqrt(384 * 384) + math.sqrt(6)
    assert out["proxies"]["at_p"] == pytest.approx(expected, rel=1e-12)


def test_l_phi_and_grid_m_options(minilm_json: tuple[dict[str, Any], dict[str, Any]]) -> None:
    plain, at_one = minilm_json
    out = json.loads(run_main("analyze", "minilm-l6", "--json", "--l-phi", "2", "--grid-m", "5", "--p", "1"))
    assert out["l_phi"] == 2.0 and type(out["l_phi"]) is float
    assert out["grid_m"] == 5
    # alpha of layer l carries one factor L_phi per layer above it
    shift = math.log10(2 / 1.13)
    for layer, (a, b) in enumerate(zip(out["log10_alpha"], plain["log10_alpha"], strict=True)):
        assert a - b == pytest.approx((5 - layer) * shift, abs=1e-9)
    assert all(abs(m["p_opt"] * 5 - round(m["p_opt"] * 5)) < 1e-12 for m in out["matrices"])
    # MiniLM's scales s_W are so large (alpha up to 1e22) that p* = 0 everywhere, on either grid:
    # the proxy at p* is then sum sqrt(rank N) + sqrt(L), independent of L_phi
    assert {m["p_opt"] for m in out["matrices"]} == {m["p_opt"] for m in plain["matrices"]} == {0.0}
    expected = 144 * math.sqrt(32 * 384) + 12 * 384 + math.sqrt(6)
    assert out["proxies"]["ours"] == pytest.approx(expected, rel=1e-12)
    assert plain["proxies"]["ours"] == pytest.approx(expected, rel=1e-12)
    # at a fixed p > 0 the scale enters: c(W; 1) grows with s_W^(1/3), except in the top layer (alpha = 1)
    assert out["proxies"]["at_p"] > at_one["proxies"]["at_p"]
    assert out["proxies"]["edelman_log10"] > plain["proxies"]["edelman_log10"]
    for new, old in zip(out["matrices"], at_one["matrices"], strict=True):
        assert new["spectral_norm"] == old["spectral_norm"] and new["gamma"] == old["gamma"]
        shift = (5 - new["layer"]) * math.log10(2 / 1.13)
        assert new["log10_scale"] - old["log10_scale"] == pytest.approx(shift, abs=1e-9)
        assert new["contribution_at_p"] == pytest.approx(old["contribution_at_p"] * 10 ** (shift / 3), rel=1e-9)


def test_analyze_json_on_a_local_checkpoint(
    make_checkpoint: MakeCheckpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_checkpoint(layers=3, hidden=32, heads=4, ffn=48)
    capsys.readouterr()  # drop what save_pretrained printed
    assert main(["analyze", str(directory), "--json", "--p", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    out = json.loads(captured.out)
    assert out["model"] == str(directory.resolve())
    sizes = (out["num_layers"], out["hidden_size"], out["num_heads"], out["head_dim"], out["ffn_size"])
    assert sizes == (3, 32, 4, 8, 48)
    assert out["grid_m"] == math.ceil(3 + math.log(32))
    assert [(m["layer"], m["head"], m["kind"]) for m in out["matrices"]] == expected_order(3, 4)
    for m in out["matrices"]:
        assert_types(m, MATRIX, m["kind"])
        # p = 2: c = sqrt(||W||_F s_W) N^(3/4)
        expected = math.sqrt(m["frobenius_norm"] * 10.0 ** m["log10_scale"]) * 32**0.75
        assert m["contribution_at_p"] == pytest.approx(expected, rel=1e-9)


def test_default_model_is_the_bundled_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "minilm-l6"


def test_no_cache_recomputes_the_same_numbers(
    make_checkpoint: MakeCheckpoint, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_checkpoint()
    assert main(["analyze", str(directory), "--json"]) == 0
    cached = capsys.readouterr().out
    assert main(["analyze", str(directory), "--json", "--no-cache"]) == 0
    assert capsys.readouterr().out == cached


# --- human output -------------------------------------------------------------------------------


def test_human_output_mentions_the_proxies(make_checkpoint: MakeCheckpoint, capsys: pytest.CaptureFixture[str]) -> None:
    directory = make_checkpoint(layers=2)
    assert main(["analyze", str(directory), "--json", "--p", "0.5"]) == 0
    numbers = json.loads(capsys.readouterr().out)["proxies"]
    assert main(["analyze", str(directory), "--p", "0.5"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == (
        f"{directory.resolve()}: bert, L=2 N=32 H=4 d=8 d_ff=48, 20 matrices, L_phi=1.13, "
        f"grid m={math.ceil(2 + math.log(32))}"
    )
    from specbound.present.numbers import format_number

    # the dashboard's notation: four significant digits, a power of ten where large, never E-notation
    assert (
        lines[1]
        == f"spectrum-adaptive proxy at p*:   {format_number(numbers['ours'])}  (log10 {numbers['ours_log10']:.4f})"
    )
    assert lines[2] == (
        f"spectrum-adaptive proxy at p = 0.5: {format_number(numbers['at_p'])}  (log10 {numbers['at_p_log10']:.4f})"
    )
    assert lines[3].startswith(f"Edelman-style proxy:             {format_number(numbers['edelman'])}")
    assert "e+" not in text and "e-0" not in text
    assert "per layer, c(W; p) at p = 0.5 (sqrt(L) = 1.414 is added to the total):" in text
    assert "sum_c_QK" in text and "log10_xi" in text
    assert lines[-1] == "These are proxies of the bound's leading complexity factor, not the generalization gap."


# --- models ---------------------------------------------------------------------------------------


def test_models_lists_the_bundled_model_the_miniatures_and_other_families(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "L", "N", "H", "offline", "source"]
    rows = [line.split() for line in lines[1:26]]
    others = [line.split() for line in lines[26:41]]
    assert len(rows) == 25 and lines[41] == ""
    assert others[0] == ["gpt2", "12", "768", "12", "no", "openai-community/gpt2"]
    assert [row[0] for row in others] == [
        "gpt2", "gpt_neox", "gpt_neox", "opt", "qwen2", "vit", "gemma3_text", "qwen3", "olmo2", "bloom", "phi", "phi3",
        "olmoe", "t5", "bart",
    ]  # fmt: skip
    assert others[6] == ["gemma3_text", "18", "640", "4", "no", "google/gemma-3-270m"]
    assert others[13] == ["t5", "12", "512", "8", "no", "google-t5/t5-small"]  # L: 6 encoder + 6 decoder layers
    assert "counts its encoder and decoder layers together" in lines[42]
    source = lines[0].index("source")  # the columns stay aligned under their headers, long names included
    assert {line.rindex(" ") + 1 for line in lines[1:41]} == {source}
    assert rows[0] == ["minilm-l6", "6", "384", "12", "yes", "sentence-transformers/all-MiniLM-L6-v2"]
    assert rows[1][:4] == ["L2-H128", "2", "128", "2"] and rows[1][5] == "google/bert_uncased_L-2_H-128_A-2"
    assert rows[-1][:4] == ["L12-H768", "12", "768", "12"]
    assert all(row[4] in ("yes", "no") for row in rows)
    assert "local checkpoint directory" in lines[-1] and "llama" in lines[-1]


# --- export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_writes_tables_that_match_the_json(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    directory = make_checkpoint(layers=2, seed=9)
    assert main(["analyze", str(directory), "--json", "--p", "1.5"]) == 0
    reference = json.loads(capsys.readouterr().out)
    out = tmp_path / "out"
    assert main(["export", str(directory), "--format", fmt, "--out", str(out), "--p", "1.5"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == f"wrote matrices.{fmt}, layers.{fmt}, singular_values.{fmt} and summary.json to {out}"
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"layers.{fmt}", f"matrices.{fmt}", f"singular_values.{fmt}", "summary.json"]
    )

    read = pd.read_csv if fmt == "csv" else (lambda p: pd.read_json(p, orient="records"))
    # pandas writes JSON floats with 10 decimals; CSV keeps every digit
    rtol, atol = (1e-15, 0.0) if fmt == "csv" else (1e-9, 1e-10)
    matrices = read(out / f"matrices.{fmt}")
    assert len(matrices) == 20
    assert matrices["kind"].tolist() == [m["kind"] for m in reference["matrices"]]
    assert matrices["layer"].tolist() == [m["layer"] for m in reference["matrices"]]
    for column, key in (
        ("contribution", "contribution_at_p"),
        ("contribution_at_p_opt", "contribution"),
        ("p_opt", "p_opt"),
        ("spectral_norm", "spectral_norm"),
        ("norm_21", "norm_21"),
        ("norm_11", "norm_11"),
        ("gamma", "gamma"),
        ("log10_scale", "log10_scale"),
        ("rank", "rank"),
    ):
        np.testing.assert_allclose(
            matrices[column].to_numpy(dtype=float),
            [m[key] for m in reference["matrices"]],
            rtol=rtol,
            atol=atol,
            err_msg=column,
        )
    assert np.all(matrices["p"] == 1.5)

    layers = read(out / f"layers.{fmt}")
    assert layers["layer"].tolist() == [0, 1]
    np.testing.assert_allclose(layers["log10_alpha"], reference["log10_alpha"], rtol=rtol, atol=max(atol, 1e-15))
    per_layer = [sum(m["contribution_at_p"] for m in reference["matrices"] if m["layer"] == l) for l in (0, 1)]
    np.testing.assert_allclose(layers["sum_c"], per_layer, rtol=max(rtol, 1e-12), atol=atol)

    sv = read(out / f"singular_values.{fmt}")
    assert len(sv) == 20 * 32  # k = N = 32 values for every matrix here (d_ff = 48 > N)
    first = sv.groupby(["layer", "kind", "head"], dropna=False, sort=False)["sigma"].max().to_numpy()
    np.testing.assert_allclose(first, [m["spectral_norm"] for m in reference["matrices"]], rtol=rtol, atol=atol)

    summary = json.loads((out / "summary.json").read_text())
    assert summary == {k: v for k, v in reference.items() if k != "matrices"}


def test_export_with_a_base_writes_the_centred_columns_of_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export --base``: every matrix's delta_* columns are the JSON's ``"delta"`` fields (and at --p the
    centred contribution at p), beside the weights' own columns; summary.json names the reference."""
    assert main(["analyze", "finetune-full", "--base", "finetune-base", "--json", "--p", "0.5"]) == 0
    reference = json.loads(capsys.readouterr().out)
    out = tmp_path / "out"
    assert main(["export", "finetune-full", "--base", "finetune-base", "--out", str(out), "--p", "0.5"]) == 0
    matrices = pd.read_csv(out / "matrices.csv")
    for name in ("rank", "spectral_norm", "frobenius_norm", "nuclear_norm", "norm_21", "p_opt", "contribution"):
        np.testing.assert_allclose(
            matrices[f"delta_{name}"].to_numpy(dtype=float),
            [m["delta"][name] for m in reference["matrices"]],
            rtol=1e-15,
            err_msg=name,
        )
    np.testing.assert_array_equal(matrices["rank"], [m["rank"] for m in reference["matrices"]])  # the weights'
    centred = specbound.analyze("finetune-full", base="finetune-base", p=0.5).to_frame()
    np.testing.assert_allclose(matrices["delta_contribution_at_p"], centred["delta_contribution_at_p"], rtol=1e-15)
    layers = pd.read_csv(out / "layers.csv")
    np.testing.assert_allclose(
        layers["delta_sum_c"],
        centred.groupby("layer")["delta_contribution_at_p"].sum().to_numpy(),
        rtol=1e-12,
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference"] == reference["reference"] and summary["reference"]["model"] == "finetune-base"
    assert summary["proxies"]["ours_centred"] == pytest.approx(reference["proxies"]["ours_centred"], rel=1e-15)


def test_export_to_an_unwritable_place(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    directory = make_checkpoint()
    capsys.readouterr()
    assert main(["export", str(directory), "--out", str(blocker / "out")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0] == (
        "specbound: error: cannot create the output directory out: its parent is not "
        "an existing directory (specbound creates at most the last component of a path)"
    )


# --- errors: one line on stderr, non-zero status ----------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["analyze", "--p", "3"], "specbound analyze: error: argument --p: p must lie in [0, 2], got 3"),
        (["analyze", "--p", "x"], "specbound analyze: error: argument --p: 'x' is not a number"),
        (["analyze", "--p", "-0.5"], "specbound analyze: error: argument --p: p must lie in [0, 2], got -0.5"),
        (
            ["analyze", "--l-phi", "0"],
            "specbound analyze: error: argument --l-phi: L_phi must be a positive number of at most 1e+06, got 0",
        ),
        (
            ["analyze", "--l-phi", "nan"],
            "specbound analyze: error: argument --l-phi: L_phi must be a positive number of at most 1e+06, got nan",
        ),
        (
            ["analyze", "--grid-m", "0"],
            "specbound analyze: error: argument --grid-m: the grid resolution m must be an "
            "integer from 1 to 1000, got 0",
        ),
        (["export", "--format", "xml", "--out", "x"], "specbound export: error: argument --format: invalid choice"),
        (["bogus"], "specbound: error: argument command: invalid choice: 'bogus'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)


def test_bad_p_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["analyze", "--json", "--p", "3"])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "specbound analyze: error: argument --p: p must lie in [0, 2], got 3 (see specbound analyze --help)"
    ]


@pytest.mark.parametrize(
    "name, message",
    [
        ("not a model!", "specbound: error: 'not a model!' is neither a local directory, a Hub repository id"),
        ("L5-H128", "specbound: error: 'L5-H128' is not a BERT Miniature"),
        (
            "someone/nothing-here",
            "specbound: error: model 'someone/nothing-here' is not in the local Hugging Face "
            "cache and offline mode is on (HF_HUB_OFFLINE)",
        ),
    ],
)
def test_unknown_models_exit_1_with_one_line(name: str, message: str) -> None:
    result = run_cli("analyze", name, "--json", env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message)


def test_main_reports_errors_on_stderr(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["analyze", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"specbound: error: {tmp_path.name} has no config.json: not a Hugging Face checkpoint directory\n"
    )


# --- atlas models ---------------------------------------------------------------------------------


def test_analyze_and_export_open_an_atlas_model(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from specbound.io.atlas import save_atlas
    from specbound.io.loading import load_profile

    profiles = [load_profile(str(make_checkpoint(layers=layers, seed=layers))) for layers in (1, 2)]
    atlas_file = save_atlas(profiles, tmp_path / "two.npz")
    capsys.readouterr()
    assert main(["analyze", str(profiles[1].model), "--json"]) == 0
    from_checkpoint = json.loads(capsys.readouterr().out)
    assert main(["analyze", f"atlas:{atlas_file}#{profiles[1].model}", "--json"]) == 0
    from_atlas = json.loads(capsys.readouterr().out)
    assert from_atlas == from_checkpoint  # the stored spectra give every number exactly
    assert main(["export", f"atlas:{atlas_file}#{profiles[0].model}", "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "matrices.csv").is_file()
    capsys.readouterr()
    assert main(["analyze", f"atlas:{atlas_file}"]) == 1  # two models: the name must say which
    assert "holds 2 models: name one as atlas:FILE#MODEL" in capsys.readouterr().err
    assert main(["analyze", f"atlas:{tmp_path / 'missing.npz'}#x"]) == 1
    assert "no atlas file at" in capsys.readouterr().err


# --- bad checkpoints through the command line (SPEC §8) ----------------------------------------------


@pytest.mark.parametrize("case", list(BAD_CHECKPOINTS))
def test_bad_checkpoint_is_one_line_with_exit_1(make_checkpoint: MakeCheckpoint, case: str) -> None:
    spoil, _, words = BAD_CHECKPOINTS[case]
    directory = make_checkpoint()
    spoil(directory)
    result = cli("analyze", str(directory), "--json")
    assert (result.returncode, result.stdout) == (1, "")
    (line,) = result.stderr.splitlines()
    assert line.startswith("specbound: error: ")
    for word in words:
        assert word in line


def test_zero_query_weight_through_the_cli(make_checkpoint: MakeCheckpoint, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from specbound.cli import main

    directory = make_checkpoint()

    def edit(state: dict[str, torch.Tensor]) -> None:
        state["encoder.layer.1.attention.self.query.weight"] = torch.zeros(32, 32)

    edit_weights(directory, edit)
    assert main(["analyze", str(directory), "--json", "--p", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    zeros = [m for m in out["matrices"] if m["layer"] == 1 and m["kind"] == "QK"]
    assert [(m["rank"], m["contribution"], m["contribution_at_p"]) for m in zeros] == [(0, 0.0, 0.0)] * 4
    assert all(m["contribution"] > 0 for m in out["matrices"] if m not in zeros)


def test_commands_come_from_installed_plugins_and_a_broken_one_is_left_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``specbound lab`` is the lab's entry point in the ``specbound.commands`` group; a plugin that fails
    to load costs its own commands and one warning, never the library's."""
    from importlib.metadata import EntryPoint, entry_points

    import specbound.cli as cli_module
    import specbound.cli.program

    installed = entry_points(group=cli_module.COMMAND_PLUGINS)  # what the command line reads
    assert [(e.name, e.value) for e in installed] == [("lab", "specbound_lab.cli:add_lab_commands")]
    broken = EntryPoint(name="broken", value="no_such_plugin_module:add", group=cli_module.COMMAND_PLUGINS)
    monkeypatch.setattr(specbound.cli.program, "entry_points", lambda group: [broken, *installed])
    parser = cli_module.build_parser()
    warning = capsys.readouterr().err
    assert warning.startswith("specbound: warning: the 'broken' commands of no_such_plugin_module:add are unavailable")
    assert "ModuleNotFoundError" in warning and warning.count("\n") == 1
    assert parser.parse_args(["lab", "show"]).prints_result == "lab show"  # the others are all there
    assert parser.parse_args(["analyze"]).prints_result == "analyze"


def test_no_help_text_sends_a_user_to_the_specification() -> None:
    """Every command's --help (the lab's too) speaks for itself: the specification is the developers'
    document, not something a user has, so no help names it ("SPEC §14", "SPEC 13b")."""
    import argparse

    from specbound.cli import build_parser

    def helps(parser: argparse.ArgumentParser) -> list[str]:
        found = [parser.format_help()]
        for action in parser._actions:  # argparse keeps the sub-commands here and nowhere public
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    found += helps(sub)
        return found

    texts = helps(build_parser())
    assert len(texts) > 10 and any("lab" in text for text in texts)  # every command, the lab's included
    assert not [text.splitlines()[0] for text in texts if re.search(r"\bSPEC\b", text)]  # SPECBOUND_… may stay
