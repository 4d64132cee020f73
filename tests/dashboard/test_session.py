"""The session's model has one owner: :mod:`dashboard.state.session` alone writes which model the pages show,
the last opening error and the pending download; :func:`dashboard.state.atlas.use` alone writes the label of
the session's atlas. The picker, a shared link and the Lab page call them (their flows are driven in
``tests/app``); this test holds every other module to that, by reading the source."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dashboard.state import atlas, session

ROOT = Path(__file__).resolve().parents[2]
#: The session-state keys of the model state, by the module that owns each.
OWNED = {
    session.MODEL_KEY: "dashboard/state/session.py",
    session.ERROR_KEY: "dashboard/state/session.py",
    session.PENDING_KEY: "dashboard/state/session.py",
    atlas.LABEL_KEY: "dashboard/state/atlas.py",
}
#: How a module names those keys: the constants' names as well as their values.
NAMES = {"MODEL_KEY": session.MODEL_KEY, "ERROR_KEY": session.ERROR_KEY, "PENDING_KEY": session.PENDING_KEY}
NAMES |= {"LABEL_KEY": atlas.LABEL_KEY}


def _key(node: ast.expr, local: Mapping[str, Any]) -> str | None:
    """The model-state key an expression names (a literal, ``module.KEY``, or ``KEY``: the module's own
    constant of that name first), else None."""
    if isinstance(node, ast.Name) and node.id in local:
        node = ast.Constant(local[node.id])
    if isinstance(node, ast.Constant):
        return node.value if node.value in OWNED else None
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return NAMES.get(name or "")


def _is_session_state(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def writes(path: Path) -> list[tuple[str, int]]:
    """(key, line) of every write of a model-state key in one file: an assignment (to an item or an
    attribute of the session state, augmented too), a ``del``, ``pop``, ``setdefault`` or ``update``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local = {  # the module's own constants: a page's PENDING_KEY is its own key, not the session's
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            targets = []
        for target in targets:
            if isinstance(target, ast.Subscript) and _is_session_state(target.value):
                key = _key(target.slice, local)
            elif isinstance(target, ast.Attribute) and _is_session_state(target.value):  # session_state.model = ...
                key = target.attr if target.attr in OWNED else None
            else:
                key = None
            if key:
                assert isinstance(node, ast.stmt)  # only statements have targets
                found.append((key, node.lineno))
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_session_state(node.func.value)
        ):
            continue
        if node.func.attr in ("pop", "setdefault", "__setitem__", "__delitem__") and node.args:
            keys = [_key(node.args[0], local)]
        elif node.func.attr == "update":  # update({KEY: ...}) or update(model=...)
            literal = node.args[0] if node.args and isinstance(node.args[0], ast.Dict) else None
            keys = [_key(k, local) for k in (literal.keys if literal else []) if k is not None]
            keys += [k.arg if k.arg in OWNED else None for k in node.keywords]
        else:
            keys = []
        found += [(key, node.lineno) for key in keys if key]
    return found


def test_only_the_owner_writes_each_key_of_the_model_state() -> None:
    sources = [ROOT / "app.py", *sorted((ROOT / "dashboard").rglob("*.py")), *sorted((ROOT / "pages").glob("*.py"))]
    by_key: dict[str, set[str]] = {}
    for path in sources:
        for key, _ in writes(path):
            by_key.setdefault(key, set()).add(path.relative_to(ROOT).as_posix())
    assert by_key == {key: {owner} for key, owner in OWNED.items()}


def test_the_reader_finds_a_write_in_each_form(tmp_path: Path) -> None:
    source = tmp_path / "page.py"
    source.write_text(
        "import streamlit as st\nfrom dashboard import session\nOWN_KEY = 'model'\n"
        "st.session_state[session.MODEL_KEY] = 'x'\n"
        "st.session_state.pop('model_error', None)\n"
        "del st.session_state[PENDING_KEY]\n"
        "st.session_state['other'] = 1\n"
        "st.session_state[OWN_KEY] = 2\n"
        "st.session_state.model = 'y'\n"
        "st.session_state.update({'model_error': 'z'}, download_pending=None)\n"
        "st.session_state['model'] += 'w'\n"
    )
    assert sorted(writes(source), key=lambda write: write[1]) == [
        ("model", 4),
        ("model_error", 5),
        ("download_pending", 6),
        ("model", 8),
        ("model", 9),
        ("model_error", 10),
        ("download_pending", 10),
        ("model", 11),
    ]
