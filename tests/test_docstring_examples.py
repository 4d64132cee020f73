"""The examples in the public API's docstrings and in the dashboard's views run as written (doctest), on
the bundled model, the lab's shipped references and its fine-tuning trio (offline, a second or two
each): a changed return value or a renamed argument fails here before a reader meets it."""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

import specbound

MODULES = (
    "specbound.api.analysis",
    "specbound.api.runs",
    "specbound.cli",
    "specbound.cli.analyze",
    "specbound.cli.arguments",
    "specbound.cli.atlas",
    "specbound.cli.export",
    "specbound.cli.grid",
    "specbound.cli.program",
    "specbound.cli.terminal",
    "specbound.cli.trajectory",
    "specbound.core.architecture",
    "specbound.core.patterns",
    "specbound.core.bounds",
    "specbound.core.directions",
    "specbound.core.engine",
    "specbound.core.errors",
    "specbound.core.limits",
    "specbound.core.profile",
    "specbound.core.proxies",
    "specbound.core.values",
    "specbound.io.centred",
    "specbound.io.checkpoints.lora",
    "specbound.io.families.base",
    "specbound.io.loading",
    "specbound.io.options",
    "specbound.studies.resumable",
    "specbound.studies.scaling",
    "specbound.studies.trajectory",
    "specbound_lab.answer",
    "specbound_lab.compiled",
    "specbound_lab.finetune",
    "specbound_lab.records",
    "specbound_lab.robust",
    "specbound_lab.study",
    "specbound_lab.tasks",
    "specbound_lab.train",
    "specbound.present.figures.bounds",
    "specbound.present.figures.spectra",
    "specbound.present.figures.style",
    "specbound.present.figures.scaling",
    "specbound.present.report",
    "dashboard.state.adapters",
    "dashboard.wording.text",
    "dashboard.wording.lab",
    "dashboard.wording.vocabulary",
    # the dashboard's views: what each page draws, built without Streamlit
    "dashboard.views.bounds",
    "dashboard.views.compare",
    "dashboard.views.lab",
    "dashboard.views.lab_tables",
    "dashboard.views.runs",
    "dashboard.views.scaling",
    "dashboard.views.spectra",
    "dashboard.views.theory",
    "dashboard.views.why",
)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, globs={**vars(module), "specbound": specbound}, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
    assert result.attempted > 0, f"{name} has no example"


@pytest.mark.parametrize("name", [name for name in sorted(specbound.__all__) if callable(getattr(specbound, name))])
def test_every_public_name_has_an_example(name: str) -> None:
    """Every class and function ``specbound`` exports shows how it is used."""
    item = getattr(specbound, name)
    assert ">>>" in (inspect.getdoc(item) or ""), f"specbound.{name}'s docstring has no example"
