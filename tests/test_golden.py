"""The BERT family's results stay what they were before other families were read, on any machine.

``tests/golden/*.json`` hold ``specbound analyze --json --p 1`` as printed before the family adapters
existed, for the bundled MiniLM and two random checkpoints rebuilt from a numpy seed
(:mod:`golden_models`). Every field of those files must come back: integers, strings and the grid's
p* exactly, every float within the tolerance its computation allows (:data:`FIELD_RTOL`). The files
were written on one machine; another CPU or BLAS kernel may move the last bits of a singular value
(``0.26815036098628664`` against ``0.2681503609862866``), so floats from a file are never compared
with ``==``. Bit-for-bit sameness is asserted where it means something: two analyses in one run.
Fields added since (the family, the adaptations, ...) are checked to say "a BERT, no adaptation".
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from cli_runner import run_main, strict_json
from golden_models import GOLDEN_DIR, GOLDEN_MODELS, write_golden_checkpoint

#: Relative tolerance of a float field, from how it is computed (ε = 2.2e-16). Singular values from
#: LAPACK carry an error of about k·ε·σ₁ on any kernel (k ≤ 384 here: up to 8.5e-14 of σ₁); the
#: norms and local factors built from them, and the contributions c(W; p) (powers of those), keep that
#: order, with a margin for the sums over 384 × 1536 entries that another kernel adds in another order.
#: The proxies are sums of positive contributions, held to the 1e-13 that the project states for them.
FIELD_RTOL: dict[str, float] = {
    "spectral_norm": 1e-12,
    "frobenius_norm": 1e-12,
    "nuclear_norm": 1e-12,
    "norm_21": 1e-12,
    "norm_11": 1e-12,
    "stable_rank": 1e-12,
    "gamma": 1e-12,
    "contribution": 1e-12,
    "contribution_at_p": 1e-12,
    "ours": 1e-13,
    "edelman": 1e-13,
    "at_p": 1e-13,
}
#: Absolute tolerance of a log10 field (log10_scale, log10_alpha, the proxies' logs): 1e-12 in a
#: log10 is a relative change of 2.3e-12 in the value.
LOG10_ATOL = 1e-12
#: Floats that are chosen, not computed to rounding: a point of the grid P_m and the constant L_phi.
EXACT = frozenset({"p_opt", "l_phi"})


def _close(field: str, now: float, golden: float) -> bool:
    if field in EXACT:
        return now == golden
    if "log10" in field:
        return math.isclose(now, golden, rel_tol=0.0, abs_tol=LOG10_ATOL)
    return math.isclose(now, golden, rel_tol=FIELD_RTOL[field], abs_tol=0.0)


def _same_fields(golden: object, now: object, where: str = "", field: str = "") -> None:
    """Every field of ``golden`` is in ``now``: dicts and lists alike, floats within their tolerance."""
    if isinstance(golden, dict):
        assert isinstance(now, dict), where
        for key, value in golden.items():
            assert key in now, f"{where}.{key} is gone"
            _same_fields(value, now[key], f"{where}.{key}", key)
    elif isinstance(golden, list):
        assert isinstance(now, list) and len(now) == len(golden), where
        for i, (a, b) in enumerate(zip(golden, now, strict=True)):
            _same_fields(a, b, f"{where}[{i}]", field)
    elif isinstance(golden, float):
        assert isinstance(now, float) and _close(field, now, golden), f"{where}: {now!r} is not {golden!r}"
    else:  # an int (rank, layer, head, a size), a string (the kind) or null (a head of an MLP matrix)
        assert type(now) is type(golden) and now == golden, f"{where}: {now!r} != {golden!r}"


@pytest.mark.parametrize("name", [*GOLDEN_MODELS, "minilm-l6"])
def test_bert_family_results_are_unchanged(name: str, tmp_path: Path) -> None:
    source = str(write_golden_checkpoint(name, tmp_path)) if name in GOLDEN_MODELS else name
    now = strict_json(run_main("analyze", source, "--json", "--p", "1"))
    golden = json.loads((GOLDEN_DIR / f"{name}.json").read_text())
    golden.pop("model")
    _same_fields(golden, now)
    family = "roberta" if name.startswith("roberta") else "bert"
    assert (now["family"], now["adaptations"], now["mlp"], now["residual"]) == (family, [], "plain", "sequential")
    assert now["num_kv_heads"] == now["num_heads"]
    # within one run, on one machine, the same checkpoint gives the same bits (the cache is off)
    assert strict_json(run_main("analyze", source, "--json", "--p", "1", "--no-cache")) == now


def test_the_comparison_fails_on_a_wrong_digit_and_holds_on_a_last_bit() -> None:
    """The tolerance is no blanket: a change in the 12th digit of a proxy fails, one ulp passes."""
    golden = {"proxies": {"ours": 100.72114932436787, "ours_log10": 2.0031}, "matrices": [{"p_opt": 0.5}]}
    last_bit = {"proxies": {"ours": 100.72114932436796, "ours_log10": 2.0031}, "matrices": [{"p_opt": 0.5}]}
    _same_fields(golden, last_bit)
    for wrong in (
        {"proxies": {"ours": 100.72114932446787, "ours_log10": 2.0031}, "matrices": [{"p_opt": 0.5}]},
        {"proxies": {"ours": 100.72114932436787, "ours_log10": 2.0032}, "matrices": [{"p_opt": 0.5}]},
        {"proxies": {"ours": 100.72114932436787, "ours_log10": 2.0031}, "matrices": [{"p_opt": 0.5 + 1e-16}]},
        {"proxies": {"ours": 100.72114932436787, "ours_log10": 2.0031}, "matrices": []},
    ):
        with pytest.raises(AssertionError):
            _same_fields(golden, wrong)
