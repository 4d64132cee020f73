"""The package installs as others install it: a wheel into a clean environment outside the repository.

The wheels of the library and of the lab beside it are built from this tree, installed into a new
virtual environment with pip, and run there (the console script, ``specbound lab`` through the lab's
entry point and ``import specbound`` from the environment, not from the source tree). The new
environment sees the dependencies of the project's own set-up through a path entry, so no download is
needed; ``pip check`` then verifies that they satisfy the ranges the wheels declare.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_installs_into_a_clean_environment_and_runs(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    for project in (ROOT, ROOT / "lab"):  # the library, and the lab beside it
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(dist),
                str(project),
            ],
            check=True,
            capture_output=True,
            cwd=tmp_path,
            timeout=600,
        )
    (wheel,) = dist.glob("specbound-*.whl")
    (lab_wheel,) = dist.glob("specbound_lab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "specbound/py.typed" in names and "specbound/io/families/llama.py" in names
    assert "specbound/io/finetune_trio/lora/adapter_model.safetensors" in names  # the bundled trio
    assert not any(n.startswith(("tests/", "dashboard/", "pages/", "specbound_lab/", "specbound/lab/")) for n in names)
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert "Requires-Dist: torch>=2.3" in requires  # a range: the user's own torch is kept
    assert any("transformers" in r and 'extra == "trainer"' in r for r in requires)
    assert any("dask" in r and 'extra == "dask"' in r for r in requires)
    assert any("streamlit" in r and 'extra == "dashboard"' in r for r in requires)
    with zipfile.ZipFile(lab_wheel) as archive:
        lab_names = set(archive.namelist())
        plugins = archive.read(next(n for n in lab_names if n.endswith(".dist-info/entry_points.txt"))).decode()
    for shipped in ("reference", "reference_decoder", "reference_grokking", "reference_fit", "reference_finetune"):
        assert any(n.startswith(f"specbound_lab/{shipped}/runs/") for n in lab_names), shipped
    assert "[specbound.commands]\nlab = specbound_lab.cli:add_lab_commands" in plugins

    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
            str(lab_wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # the dependencies of this set-up, seen through a path entry (the editable install of the source tree
    # is a .pth hook there, which a path entry does not run)
    target_site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (target_site / "project-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    environment = {"PATH": str(env_dir / "bin"), "SPECBOUND_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    where = subprocess.run(
        [str(python), "-c", "import specbound; print(specbound.__file__)"],
        check=True, capture_output=True, text=True, cwd=outside, env=environment,
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(env_dir), where
    result = subprocess.run(
        [str(env_dir / "bin" / "specbound"), "analyze", "--json"],
        capture_output=True, text=True, cwd=outside, env=environment, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "minilm-l6"
    lab = subprocess.run(  # the lab's commands, found through its entry point, on its own shipped reference
        [str(env_dir / "bin" / "specbound"), "lab", "show"],
        capture_output=True, text=True, cwd=outside, env=environment, timeout=300,
    )  # fmt: skip
    assert lab.returncode == 0, lab.stderr
    assert lab.stdout.startswith("the shipped reference") and "kendall_tau" in lab.stdout, lab.stdout[:2000]
    check = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "check"], capture_output=True, text=True, timeout=120
    )
    assert "specbound" not in check.stdout, check.stdout  # every declared range is met by the pinned set-up
