"""The examples in the public API's docstrings run as written (doctest), on the bundled model and the
lab's shipped fine-tuning trio (offline, a second or two each): a changed return value or a renamed
argument fails here before a reader meets it."""

from __future__ import annotations

import doctest
import importlib

import pytest

import specbound

MODULES = (
    "specbound.api",
    "specbound.centred",
    "specbound.checkpoints.lora",
    "specbound.figures.bounds",
    "specbound.figures.spectra",
    "specbound.runs",
    "specbound.lab.finetune",
    "specbound.values",
)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, globs={**vars(module), "specbound": specbound}, optionflags=doctest.ELLIPSIS, verbose=False
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
    assert result.attempted > 0, f"{name} has no example"
