"""Downloads from the Hub, end to end, against a local server that speaks the Hub's file protocol.

The download code is specbound's and huggingface_hub's own; only the address differs
(``HF_ENDPOINT``, see tests/local_hub.py). Each case runs in a fresh process, because
huggingface_hub reads its endpoint and cache location once, at import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from local_hub import COMMIT, LocalHub
from tiny_models import MakeCheckpoint

from specbound.io.models import miniature_repo_id

REPORT_DOWNLOADS = """
import json, sys
from specbound.io.loading import load_profile
events = []
profile = load_profile(sys.argv[1], progress=events.append)
print(json.dumps({"shape": [profile.shape.num_layers, profile.shape.hidden_size, profile.shape.num_heads],
                  "downloads": [[e.detail, e.done, e.total] for e in events if e.stage == "download"]}))
"""


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[LocalHub]:
    with LocalHub(tmp_path / "hub") as running:
        yield running


def run(hub: LocalHub, tmp_path: Path, *args: str, offline: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ, HF_ENDPOINT=hub.url, HF_HOME=str(tmp_path / "hf"), SPECBOUND_CACHE=str(tmp_path / "profiles")
    )
    env.pop("HF_HUB_OFFLINE", None)
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=300)


def snapshot(tmp_path: Path, repo_id: str) -> Path:
    return tmp_path / "hf" / "hub" / f"models--{repo_id.replace('/', '--')}" / "snapshots" / COMMIT


def test_download_reports_progress_and_fills_the_hub_cache(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint
) -> None:
    hub.add("someone/tiny-bert", make_checkpoint("bert", layers=2, hidden=32, heads=4))
    result = run(hub, tmp_path, "-c", REPORT_DOWNLOADS, "someone/tiny-bert")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["shape"] == [2, 32, 4]
    finished = {name: (done, total) for name, done, total in report["downloads"] if done == total}
    weights = (hub.root / "someone/tiny-bert/model.safetensors").stat().st_size
    assert finished["model.safetensors"] == (weights, weights)  # byte progress up to the full size
    assert "config.json" in finished
    assert sorted(p.name for p in snapshot(tmp_path, "someone/tiny-bert").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]

    # a second use needs no network
    again = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "someone/tiny-bert", "--json", offline=True)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["num_layers"] == 2


def test_only_the_needed_files_are_downloaded(hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint) -> None:
    # like most miniature repositories: a PyTorch pickle only, beside files the analysis never reads
    hub.add(
        "someone/pickled",
        make_checkpoint("bert", safe=False),
        extra_files={"vocab.txt": b"[PAD]\n", "tf_model.h5": b"\0" * 4096, "flax_model.msgpack": b"\0" * 64},
    )
    result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "someone/pickled", "--json")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in snapshot(tmp_path, "someone/pickled").iterdir()) == [
        "config.json",
        "pytorch_model.bin",
    ]


def test_a_miniature_alias_downloads_and_is_then_listed_offline(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint
) -> None:
    repo = miniature_repo_id(2, 128)
    hub.add(repo, make_checkpoint("bert", layers=2, hidden=128, heads=2, ffn=256))
    result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "L2-H128", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "L2-H128"
    listing = run(hub, tmp_path, "-m", "specbound.cli", "models", offline=True).stdout
    rows = {line.split()[0]: line.split()[4] for line in listing.splitlines()[1:26]}
    assert rows["L2-H128"] == "yes" and rows["L4-H128"] == "no"


def test_a_repository_that_does_not_exist(hub: LocalHub, tmp_path: Path) -> None:
    result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "someone/missing")
    assert result.returncode == 1
    assert result.stderr == (
        "specbound: error: there is no model 'someone/missing' on the Hugging Face Hub (or it is private)\n"
    )


def test_a_repository_without_weights(hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint) -> None:
    repo = hub.add("someone/config-only", make_checkpoint("bert"))
    (repo / "model.safetensors").unlink()
    result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "someone/config-only")
    assert result.returncode == 1
    assert result.stderr == (
        "specbound: error: 'someone/config-only' on the Hub has neither safetensors nor PyTorch weights\n"
    )


def test_two_revisions_of_one_repository_are_downloaded_cached_and_analysed_apart(
    hub: LocalHub, tmp_path: Path, make_checkpoint: MakeCheckpoint
) -> None:
    """``owner/name@REVISION`` (Pythia's step1000, ...): each revision its own snapshot and profile."""
    early, late = make_checkpoint(layers=2, seed=1, name="early"), make_checkpoint(layers=2, seed=2, name="late")
    hub.add("someone/run", early, revision="step1")
    hub.add("someone/run", late, revision="step2")
    outputs = {}
    for revision in ("step1", "step2"):
        result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", f"someone/run@{revision}", "--json")
        assert result.returncode == 0, result.stderr
        outputs[revision] = json.loads(result.stdout)
        assert outputs[revision]["model"] == f"someone/run@{revision}"
    assert outputs["step1"]["proxies"] != outputs["step2"]["proxies"]
    for revision, source in (("step1", early), ("step2", late)):
        direct = json.loads(run(hub, tmp_path, "-m", "specbound.cli", "analyze", str(source), "--json").stdout)
        assert outputs[revision]["proxies"] == direct["proxies"]
    # both revisions are now in the Hub cache: offline, each opens as itself
    for revision in ("step1", "step2"):
        result = run(hub, tmp_path, "-m", "specbound.cli", "analyze", f"someone/run@{revision}", "--json", offline=True)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["proxies"] == outputs[revision]["proxies"]
    missing = run(hub, tmp_path, "-m", "specbound.cli", "analyze", "someone/run@step3", "--json")
    assert missing.returncode != 0 and "has no revision 'step3'" in missing.stderr
