"""How results are shown: numbers in words, the explanations, the JSON and text report, the figures.

Reads every layer below it; nothing below reads it.

The names in ``__all__`` are this layer's public surface: what a package built on specbound (the
lab beside it, ``specbound_lab``) imports, and all it may import (``tests/lab/test_public_api.py``).
"""

from __future__ import annotations

from .numbers import format_count, format_log, format_number, format_percent

__all__ = [
    "format_count",
    "format_log",
    "format_number",
    "format_percent",
]
