"""A LoRA adapter opened on a base given in the sidebar: one name for the pair.

Every cache, link and page knows the open model by one name. An adapter read against the base its
``adapter_config.json`` records is its directory's name like any model's (the base is found as
:func:`specbound.io.loading.locate_adapter_base` finds it). An adapter the visitor opens on another
base (the sidebar's field, or the pinned baseline) is named ``ADAPTER on base BASE``
(:func:`with_base`), so that the pair is cached, linked and reopened as one model; only
:mod:`dashboard.state.data` takes the name apart again (:func:`split_base`), to merge the adapter into
that base. Both halves go through the visitor rules (:func:`dashboard.safety.model_ref`).

Example:
    >>> name = with_base("runs/my-lora", "finetune-base")
    >>> name, split_base(name), split_base("minilm-l6")
    ('runs/my-lora on base finetune-base', ('runs/my-lora', 'finetune-base'), ('minilm-l6', None))
"""

from __future__ import annotations

#: Between an adapter's name and its base's in the one name of the pair.
BASE_SEP = " on base "


def with_base(adapter: str, base: str) -> str:
    """The one name of ``adapter`` merged into ``base``."""
    return f"{adapter.strip()}{BASE_SEP}{base.strip()}"


def split_base(name: str) -> tuple[str, str | None]:
    """(the adapter, its base) of a pair's name; (the name, None) for any other model."""
    adapter, sep, base = name.rpartition(BASE_SEP)
    if not sep or not adapter.strip() or not base.strip():
        return name, None
    return adapter.strip(), base.strip()
