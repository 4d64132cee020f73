"""Trajectories of real training runs (``specbound trajectory``), and batch commands in parallel.

A real transformers ``Trainer`` writes three checkpoints; the trajectory has one row per step equal to
``specbound.analyze`` of that checkpoint, the losses the Trainer logged there, and an atlas of the
steps. Re-runs resume; ``--workers 2`` and a real ``dask.distributed.LocalCluster`` on the loopback
interface (two worker processes) write exactly the files of a serial run, for ``trajectory`` and
``grid``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import run_cli, run_main
from local_hub import LocalHub
from tiny_models import MakeCheckpoint

import specbound
from specbound.api.runs import TRAINER_STATE, hub_checkpoints
from specbound.io.atlas import load_atlas

STEPS, SAVE_EVERY = 12, 4


@pytest.fixture(scope="module")
def trainer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Trainer output directory with checkpoint-4, -8 and -12 (losses and eval losses logged at each)."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=30, num_hidden_layers=2, hidden_size=32, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=16,  # two labels: the default
    )  # fmt: skip
    model = transformers.BertForSequenceClassification(config)
    ids = torch.randint(1, 30, (48, 8), generator=torch.Generator().manual_seed(0))
    data = [{"input_ids": i, "labels": int(i[0] % 2)} for i in ids]
    out = tmp_path_factory.mktemp("run") / "tiny-run"
    args = transformers.TrainingArguments(
        output_dir=str(out), max_steps=STEPS, per_device_train_batch_size=8, logging_steps=SAVE_EVERY,
        save_steps=SAVE_EVERY, eval_strategy="steps", eval_steps=SAVE_EVERY, report_to=[], use_cpu=True,
        disable_tqdm=True, seed=0,
    )  # fmt: skip
    transformers.Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:16]).train()
    return out


@pytest.fixture(scope="module")
def cluster(own_main_module: None) -> Iterator[str]:
    """A dask.distributed LocalCluster of two worker processes on the loopback interface."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as c:
        yield c.scheduler_address


def _rows(directory: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((directory / "trajectory.csv").read_text())))


def test_a_trainer_output_directory_gives_one_row_per_checkpoint(trainer_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "traj"
    run_main("trajectory", str(trainer_run), "--out", str(out))
    rows = _rows(out)
    assert [int(r["step"]) for r in rows] == [4, 8, 12]
    import json

    for row in rows:
        checkpoint = trainer_run / f"checkpoint-{row['step']}"
        result = specbound.analyze(checkpoint)
        assert float(row["ours_log10"]) == pytest.approx(result.ours_log10, rel=1e-15)
        assert float(row["edelman_log10"]) == pytest.approx(result.edelman_log10, rel=1e-15)
        assert float(row["ours_p1_log10"]) == pytest.approx(result.at(p=1.0).at_p_log10, rel=1e-15)
        assert {"log10_alpha_L0", "log10_alpha_L1", "p_opt_mean", "p_opt_zero_share"} <= set(row)
        history = json.loads((checkpoint / TRAINER_STATE).read_text())["log_history"]
        logged = {k: v for e in history if e.get("step") == int(row["step"]) for k, v in e.items()}
        assert float(row["loss"]) == logged["loss"] and float(row["eval_loss"]) == logged["eval_loss"]
    profiles = load_atlas(out / "trajectory.npz")
    assert [p.model for p in profiles] == ["tiny-run@4", "tiny-run@8", "tiny-run@12"]


def test_a_trajectory_resumes_where_it_stopped(trainer_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "traj"
    run_main("trajectory", str(trainer_run), "--out", str(out))
    table = (out / "trajectory.csv").read_bytes()
    (out / "steps" / "step-8.json").unlink()  # as if killed before step 8 was recorded
    again = run_main("trajectory", str(trainer_run), "--out", str(out))
    assert "step 4: skipped" in again and "step 8: done" in again and "step 12: skipped" in again
    assert "(1 analysed now)" in again
    assert (out / "trajectory.csv").read_bytes() == table


def test_a_trajectory_reads_every_step_against_its_first_or_a_base(trainer_run: Path, tmp_path: Path) -> None:
    """--reference init: each step centred at the run's first saved step (SPEC §14), equal to analyze with
    that base; the first step itself has travelled nowhere. A re-run trusts its records; another
    reference analyses every step again."""
    out = tmp_path / "traj"
    run_main("trajectory", str(trainer_run), "--out", str(out), "--reference", "init")
    rows = {int(r["step"]): r for r in _rows(out)}
    first = trainer_run / "checkpoint-4"
    assert float(rows[4]["distance_frobenius"]) == 0.0 and int(rows[4]["changed_matrices"]) == 0
    assert 10 ** float(rows[4]["ours_centred_log10"]) == pytest.approx(2**0.5, rel=1e-12)  # √L, L = 2
    for step in (8, 12):
        expected = specbound.analyze(trainer_run / f"checkpoint-{step}", base=str(first), use_cache=False)
        assert float(rows[step]["ours_centred_log10"]) == pytest.approx(expected.ours_centred_log10, rel=1e-12)
        assert expected.centred is not None
        delta = expected.centred.schatten_profile
        assert float(rows[step]["distance_frobenius"]) == pytest.approx(delta.frobenius_norm.sum(), rel=1e-12)
    assert float(rows[12]["distance_frobenius"]) > float(rows[8]["distance_frobenius"]) > 0
    table = (out / "trajectory.csv").read_bytes()
    again = run_main("trajectory", str(trainer_run), "--out", str(out), "--reference", "init")
    assert "(0 analysed now)" in again and (out / "trajectory.csv").read_bytes() == table
    (out / "steps" / "step-8.delta.npz").write_bytes(b"not the difference")  # a record that no longer holds
    assert "step 8: done" in run_main("trajectory", str(trainer_run), "--out", str(out), "--reference", "init")
    based = run_main(
        "trajectory", str(trainer_run), "--out", str(out), "--reference", str(trainer_run / "checkpoint-12")
    )
    assert "(3 analysed now)" in based
    assert int(_rows(out)[-1]["changed_matrices"]) == 0  # the last step against itself


def test_checkpoint_directories_and_hub_revisions_are_runs_too(trainer_run: Path, tmp_path: Path) -> None:
    listed = tmp_path / "listed"
    run_main("trajectory", *(str(trainer_run / f"checkpoint-{s}") for s in (8, 4)), "--out", str(listed))
    assert [int(r["step"]) for r in _rows(listed)] == [4, 8]
    assert len(hub_checkpoints("EleutherAI/pythia-160m", ["pythia"])) == 154
    with LocalHub(tmp_path / "hub") as hub:
        for step in (4, 12):
            hub.add("someone/run", trainer_run / f"checkpoint-{step}", revision=f"step{step}")
        out = tmp_path / "hub-run"
        result = run_cli(
            "trajectory", "someone/run", "--revisions", "step4", "step12", "--out", str(out),
            env={"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}, unset=("HF_HUB_OFFLINE",),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    rows = _rows(out)
    assert [(int(r["step"]), r["model"]) for r in rows] == [(4, "someone/run@4"), (12, "someone/run@12")]
    direct = _rows(tmp_path / "listed")
    assert rows[0]["ours_log10"] == direct[0]["ours_log10"]


def _same_files(a: Path, b: Path, names: list[str]) -> None:
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_workers_and_a_dask_cluster_write_the_files_of_a_serial_run(
    trainer_run: Path, tmp_path: Path, cluster: str, own_main_module: None
) -> None:
    serial, local, dask = tmp_path / "serial", tmp_path / "local", tmp_path / "dask"
    run_main("trajectory", str(trainer_run), "--out", str(serial))
    run_main("trajectory", str(trainer_run), "--out", str(local), "--workers", "2")
    run_main("trajectory", str(trainer_run), "--out", str(dask), "--dask", cluster)
    steps = [f"steps/step-{s}.json" for s in (4, 8, 12)]
    for other in (local, dask):
        _same_files(serial, other, ["trajectory.csv", *steps])
        for a, b in zip(load_atlas(serial / "trajectory.npz"), load_atlas(other / "trajectory.npz"), strict=True):
            assert a.model == b.model and (a.singular_values == b.singular_values).all()


def test_grid_in_parallel_writes_the_files_of_a_serial_run(
    make_checkpoint: MakeCheckpoint, tmp_path: Path, cluster: str, own_main_module: None
) -> None:
    models = [str(make_checkpoint(layers=layers, hidden=hidden, name=f"m{layers}{hidden}")) for layers, hidden in
              ((1, 16), (2, 16), (1, 32), (2, 32))]  # fmt: skip
    outs = {kind: tmp_path / kind for kind in ("serial", "local", "dask")}
    run_main("grid", "--models", *models, "--out", str(outs["serial"]))
    run_main("grid", "--models", *models, "--out", str(outs["local"]), "--workers", "2")
    run_main("grid", "--models", *models, "--out", str(outs["dask"]), "--dask", cluster)
    tables = sorted(
        str(p.relative_to(outs["serial"])) for p in outs["serial"].rglob("*") if p.suffix in (".csv", ".json")
    )
    assert "models.csv" in tables and len(tables) > 8
    for kind in ("local", "dask"):
        _same_files(outs["serial"], outs[kind], tables)


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path, trainer_run: Path) -> None:
    import dask
    from cli_runner import assert_one_line_error, cli

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):  # Dask's own setting, not 30 s of waiting
        result = cli("trajectory", str(trainer_run), "--out", str(tmp_path / "x"), "--dask", "tcp://127.0.0.1:9")
    assert_one_line_error(result, "cannot reach the Dask scheduler at tcp://127.0.0.1:9")


def test_revisions_all_lists_the_branches_that_name_a_step(trainer_run: Path, tmp_path: Path) -> None:
    with LocalHub(tmp_path / "hub") as hub:
        hub.add("someone/run", trainer_run / "checkpoint-12")  # main: no step in its name
        for branch, step in (("stage1-step4-tokens17B", 4), ("step8", 8)):  # OLMo's names and Pythia's
            hub.add("someone/run", trainer_run / f"checkpoint-{step}", revision=branch)
        out = tmp_path / "all"
        env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf")}
        result = run_cli("trajectory", "someone/run", "--revisions", "all", "--out", str(out), env=env,
                         unset=("HF_HUB_OFFLINE",))  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "left out 1 branch(es) whose name gives no step: main" in result.stdout
        rows = _rows(out)
        assert [(int(r["step"]), r["source"]) for r in rows] == [
            (4, "someone/run@stage1-step4-tokens17B"),
            (8, "someone/run@step8"),
        ]
        for row in rows:  # each branch is the checkpoint it was made from
            expected = specbound.analyze(trainer_run / f"checkpoint-{row['step']}")
            assert float(row["ours_log10"]) == pytest.approx(expected.ours_log10, rel=1e-15)
        offline = run_cli("trajectory", "someone/run", "--revisions", "all", "--out", str(tmp_path / "off"),
                          env={**env, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert offline.returncode == 1
    assert "listing the branches of 'someone/run' needs the Hugging Face Hub" in offline.stderr
    assert "--revisions step1000" in offline.stderr and offline.stderr.count("\n") == 1
    unreachable = run_cli(
        "trajectory",
        "someone/run",
        "--revisions",
        "all",
        "--out",
        str(tmp_path / "gone"),
        env=env,
        unset=("HF_HUB_OFFLINE",),
    )  # fmt: skip  (the stand-in has stopped)
    assert unreachable.returncode == 1
    assert "cannot be reached from here" in unreachable.stderr and unreachable.stderr.count("\n") == 1
