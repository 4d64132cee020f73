"""Hostile inputs (issue 8): tests/local_hub.py beside these modules is importable from here."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
