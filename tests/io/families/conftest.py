"""Per-family tests: each tiny model of :mod:`family_models` is built once per session, on first use."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from family_models import FAMILIES, Built, build


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Built]]:
    """``tiny(name)``: the built model of family ``name`` (see :data:`family_models.FAMILIES`)."""
    from transformers.utils import logging

    logging.disable_progress_bar()  # save_pretrained's shard bars, for the length of the session
    built: dict[str, Built] = {}

    def get(name: str) -> Built:
        if name not in built:
            built[name] = build(FAMILIES[name], tmp_path_factory.mktemp(name))
        return built[name]

    yield get
    logging.enable_progress_bar()
