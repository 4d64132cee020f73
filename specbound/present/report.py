"""Results as JSON (the SPEC §5 interface) and as tables: the edge where numbers become text.

JSON is strict (RFC 8259 has no NaN or Infinity): a plain value that overflows float64 becomes
``null`` and its ``*_log10`` twin stands beside it; a log10 of a quantity that is exactly zero
(-inf, e.g. alpha below a layer whose feed-forward matrix is all zeros) is ``null`` as well.
:func:`to_json_text` applies that rule to a whole object before any of it is written.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.architecture import DECODER, ENCODER, ModelShape
from ..core.bounds import BoundAnalysis, BoundTerms, PAssignment
from ..core.defaults import NEAR_TIE_GAP
from ..core.logspace import to_log10
from ..core.profile import MatrixId
from ..core.spectrum import cumulative_energy
from ..io.models import short_model_name

#: What ``--power-law`` adds to the JSON names its fit: WeightWatcher 0.7.7's, on the eigenvalues σ² of WᵀW.
POWER_LAW_RULE: str = (
    "WeightWatcher 0.7.7 (alpha of the eigenvalues sigma^2 of W^T W; alpha_weighted = alpha log10 lambda_max)"
)

if TYPE_CHECKING:
    import pandas as pd

    from ..core.directions import Directions
    from ..core.heavy_tail import PowerLawTable
    from ..io.centred import Reference


def finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def finite_only(obj: Any) -> Any:
    """The same object with every NaN or infinite float (numpy's included) replaced by None."""
    if isinstance(obj, dict):
        return {k: finite_only(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_only(v) for v in obj]
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    return obj


def to_json_text(obj: Any, *, indent: int | None = None) -> str:
    """Strict JSON of a whole object (non-finite numbers as null), built before anything is written."""
    return json.dumps(finite_only(obj), allow_nan=False, indent=indent)


#: How a centred column is named in every table (SPEC §14, the one scheme): its name in the JSON's
#: ``"delta"`` object (:func:`delta_fields`), or the uncentred column's, after this prefix.
CENTRED_PREFIX = "delta_"


def centred_label(reference: str) -> str:
    """What every centred number says it is: ``centred at BASE``, BASE the reference's short name
    (:func:`short_model_name`), never a folder of the machine it was read on.

    Example:
        >>> centred_label("/data/runs/my-base")
        'centred at my-base'
    """
    return f"centred at {short_model_name(reference)}"


def delta_fields(centred: BoundAnalysis, directions: Directions | None = None) -> dict[str, np.ndarray]:
    """Per matrix, what the difference W - W⁰ from the reference is (SPEC §14): its rank, norms, p*
    and contribution c_ref(W; p*) to the centred proxy; with ``directions``, where it points (SPEC
    §14b: ``intruders``, ``min_cosine``, ``overlap_left``, ``overlap_right``, ``chance_cosine``,
    ``near_tie``, ``top_k``, :class:`~specbound.core.directions.Directions`). The names of
    :func:`analysis_json`'s ``"delta"`` objects and, prefixed ``delta_``, of
    :meth:`specbound.Analysis.to_frame`'s columns."""
    delta = centred.schatten_profile
    values = {
        "rank": delta.rank,
        "spectral_norm": delta.spectral_norm,
        "frobenius_norm": delta.frobenius_norm,
        "nuclear_norm": delta.nuclear_norm,
        "norm_21": delta.norm_21,
        "p_opt": centred.p_opt,
        "contribution": centred.optimal.contribution,
    }
    return values if directions is None else {**values, **directions.fields()}


def directions_json(directions: Directions) -> dict[str, Any]:
    """The JSON's ``"directions"`` object: the settings the intruders were counted with and what the
    chance level is (SPEC §14b)."""
    return {
        "k": directions.settings.k,
        "eps": directions.settings.eps,
        "near_tie_gap": NEAR_TIE_GAP,
        "chance_cosine": "sqrt(2 ln k / D), an approximation of a random unit vector's best |cos| in R^D",
        "layout": "per head the proxy's N x N product; feed-forward matrices as their module stores them",
    }


def delta_columns(centred: BoundAnalysis, directions: Directions | None = None) -> dict[str, np.ndarray]:
    """:func:`delta_fields` as frame columns: ``delta_rank``, ``delta_spectral_norm``, ...,
    ``delta_intruders``, ``delta_overlap_left``, ..."""
    return {f"{CENTRED_PREFIX}{name}": values for name, values in delta_fields(centred, directions).items()}


def _centred_json(centred: BoundAnalysis, reference: Reference) -> dict[str, Any]:
    optimal = centred.optimal
    return {
        "reference": {**reference.to_dict(), "adaptation": reference.adaptation},
        "centred_proxies": {
            "ours_centred": finite_or_none(optimal.total),
            "ours_centred_log10": float(to_log10(optimal.log_total)),
            "edelman_centred": finite_or_none(centred.edelman),
            "edelman_centred_log10": float(to_log10(centred.log_edelman)),
        },
    }


def analysis_json(
    analysis: BoundAnalysis,
    at_p: float | PAssignment | None = None,
    *,
    power_law: PowerLawTable | None = None,
    centred: BoundAnalysis | None = None,
    reference: Reference | None = None,
    directions: Directions | None = None,
) -> dict[str, Any]:
    """The object printed by ``specbound analyze MODEL --json [--p P]`` (SPEC §5), field for field.

    ``at_p`` may also be a whole assignment (from the notebook API): ``at_p`` and ``contribution_at_p``
    then hold the total and the contributions at it. With ``power_law`` (``--power-law``) each matrix
    also carries ``alpha`` and ``alpha_weighted`` (null where the fit skips it) and the object a
    ``power_law`` entry naming the rule. With ``centred`` and its ``reference`` (``--base``, SPEC §14)
    the object gains ``"reference"`` (model, kind, adaptation), the proxies ``ours_centred`` and
    ``edelman_centred`` (and their log10) in ``"proxies"``, the adaptation in ``"adaptations"``, and each
    matrix a ``"delta"`` object (:func:`delta_fields`); with ``directions`` (SPEC §14b) each ``"delta"``
    also holds ``intruders``, ``min_cosine``, ``overlap_left``, ``overlap_right``, ``chance_cosine``,
    ``near_tie`` and ``top_k``, and the object a ``"directions"`` entry (:func:`directions_json`).
    """
    profile, shape = analysis.profile, analysis.profile.shape
    optimal = analysis.evaluate()
    fixed = analysis.evaluate(at_p) if at_p is not None else None
    _check_centred(centred, reference, directions)
    deltas = None if centred is None else delta_fields(centred, directions)
    matrices = [_matrix_json(analysis, i, optimal, fixed, power_law, deltas) for i in range(len(profile.ids))]
    centred_parts = {} if centred is None or reference is None else _centred_json(centred, reference)
    return {
        "model": profile.model,
        "num_layers": shape.num_layers,
        "hidden_size": shape.hidden_size,
        "num_heads": shape.num_heads,
        "head_dim": shape.head_dim,
        # one width, or {"encoder": ..., "decoder": ...} where an encoder-decoder's stacks differ (SPEC §12)
        "ffn_size": shape.stack_ffn_sizes or shape.ffn_size,
        "l_phi": analysis.l_phi,
        "grid_m": analysis.grid_m,
        "proxies": {
            "ours": finite_or_none(optimal.total),
            "ours_log10": float(to_log10(optimal.log_total)),
            "edelman": finite_or_none(analysis.edelman),
            "edelman_log10": float(to_log10(analysis.log_edelman)),
            "at_p": None if fixed is None else finite_or_none(fixed.total),
            "at_p_log10": None if fixed is None else float(to_log10(fixed.log_total)),
            **centred_parts.get("centred_proxies", {}),
        },
        "log10_alpha": [float(v) for v in to_log10(analysis.log_alpha)],
        "matrices": matrices,
        # SPEC §11: what the block is, and every departure from the paper's BERT encoder
        "family": shape.family,
        "num_kv_heads": shape.num_kv_heads,
        "mlp": shape.mlp.value,
        "residual": shape.residual.value,
        "activation": shape.activation,
        "adaptations": [a.value for a in shape.adaptations] + ([] if reference is None else [reference.adaptation]),
        **({} if reference is None else {"reference": centred_parts["reference"]}),
        **({} if directions is None else {"directions": directions_json(directions)}),
        **moe_json(shape),
        **stacks_json(shape),
        **({} if power_law is None else {"power_law": POWER_LAW_RULE}),
    }


def _check_centred(centred: BoundAnalysis | None, reference: Reference | None, directions: Directions | None) -> None:
    """A centred analysis comes with its reference, and singular-vector directions with a centred analysis."""
    if (centred is None) != (reference is None):
        raise ValueError("a centred analysis and its reference come together")
    if directions is not None and centred is None:
        raise ValueError("singular-vector directions belong to a centred analysis")


def _matrix_json(
    analysis: BoundAnalysis,
    i: int,
    optimal: BoundTerms,
    fixed: BoundTerms | None,
    power_law: PowerLawTable | None,
    deltas: dict[str, np.ndarray] | None,
) -> dict[str, Any]:
    """Matrix ``i``'s entry of :func:`analysis_json`'s ``"matrices"``: where it sits, its norms and rank, its
    scale, p* and contributions (at p* and at the given p), and, when asked for, its power-law fit and its
    ``"delta"`` from the reference."""
    profile, shape = analysis.profile, analysis.profile.shape
    matrix = profile.ids[i]
    expert = {"expert": matrix.expert} if shape.moe else {}  # SPEC §12: 0..E-1 or "shared", null for a head
    return {
        "layer": matrix.layer,
        **stack_fields(matrix, shape),
        "head": matrix.head,
        **expert,
        "kind": matrix.kind.value,
        "rank": int(profile.rank[i]),
        "spectral_norm": float(profile.spectral_norm[i]),
        "frobenius_norm": float(profile.frobenius_norm[i]),
        "nuclear_norm": float(profile.nuclear_norm[i]),
        "norm_21": float(profile.norm_21[i]),
        "norm_11": finite_or_none(float(profile.norm_11[i])),  # null: not computed
        "stable_rank": float(profile.stable_rank[i]),
        "gamma": finite_or_none(analysis.gamma[i]),
        "log10_scale": float(to_log10(analysis.log_scale[i])),
        "p_opt": float(analysis.p_opt[i]),
        "contribution": finite_or_none(optimal.contribution[i]),
        "contribution_at_p": None if fixed is None else finite_or_none(fixed.contribution[i]),
        **(
            {}
            if power_law is None
            else {
                "alpha": finite_or_none(power_law.alpha[i]),
                "alpha_weighted": finite_or_none(power_law.alpha_weighted[i]),
            }
        ),
        **({} if deltas is None else {"delta": {name: _plain(values[i]) for name, values in deltas.items()}}),
    }


def _plain(value: Any) -> bool | int | float | None:
    """A numpy scalar as JSON holds it: an int or a bool stays one, a float that overflows is null."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    return finite_or_none(float(value))


def stack_fields(matrix: MatrixId, shape: ModelShape) -> dict[str, Any]:
    """A matrix's stack and its layer's number within it, for an encoder-decoder (SPEC §12: ``layer``
    counts through both stacks, as log10_alpha's index; ``stack_layer`` as the checkpoint's keys
    number it); none for a model of one stack."""
    return {"stack": matrix.stack, "stack_layer": matrix.stack_layer} if shape.encoder_decoder else {}


def stacks_json(shape: ModelShape) -> dict[str, Any]:
    """An encoder-decoder's fields of the JSON (SPEC §12), none for a model of one stack."""
    if not shape.encoder_decoder:
        return {}
    return {"encoder_layers": shape.encoder_layers, "decoder_layers": shape.decoder_layers}


def moe_json(shape: ModelShape) -> dict[str, Any]:
    """The mixture-of-experts fields of the JSON (SPEC §12), none for a dense model."""
    if not shape.moe:
        return {}
    return {
        "num_experts": shape.num_experts,
        "experts_per_token": shape.experts_per_token,
        "shared_expert_size": shape.shared_expert_size or None,
    }


def ffn_widths(shape: ModelShape) -> str:
    """d_ff as text: '1536', or '3072 (encoder), 4096 (decoder)' where an encoder-decoder's stacks differ."""
    stacks = shape.stack_ffn_sizes
    return f"{stacks[ENCODER]} (encoder), {stacks[DECODER]} (decoder)" if stacks else str(shape.ffn_size)


def shape_summary(shape: ModelShape) -> str:
    """'L=6 N=384 H=12 d=32 d_ff=1536' with H_kv, the MLP and residual kinds where they are not BERT's."""
    text = f"L={shape.num_layers}"
    if shape.encoder_decoder:
        text += f" ({shape.encoder_layers} encoder + {shape.decoder_layers} decoder layers, in series)"
    text += f" N={shape.hidden_size} H={shape.num_heads}"
    if shape.num_kv_heads != shape.num_heads:
        text += f" H_kv={shape.num_kv_heads}"
    text += f" d={shape.head_dim} d_ff={ffn_widths(shape)}"
    if shape.moe:
        shared = f" + a shared expert of d_ff={shape.shared_expert_size}" if shape.shared_expert_size else ""
        text += f" (gated experts: E={shape.num_experts}, top-{shape.experts_per_token}{shared})"
    elif shape.gated:
        text += " (gated MLP)"
    if shape.parallel:
        text += " (parallel residual)"
    return text


def adaptations_line(shape: ModelShape) -> str | None:
    """'adapted proxy: causal, rotary, ...' for a model that is not a BERT-family encoder, else None."""
    if shape.is_bert_like:
        return None
    return "adapted proxy (" + shape.family + "): " + ", ".join(a.value for a in shape.adaptations)


def terms_frame(analysis: BoundAnalysis, terms: BoundTerms, directions: Directions | None = None) -> pd.DataFrame:
    """Per-matrix table: norms, rank, gamma, scale, p, S_p and c(W; p) (plus p* and c at p*).

    A centred analysis (``analysis.delta``, SPEC §14) keeps the weights' own columns (rank and norms
    of W, log10 α, γ, log10 s_W, p) under their names, and names every quantity of the difference
    W - W⁰ or of the centred proxy with :data:`CENTRED_PREFIX`, as :meth:`specbound.Analysis.to_frame`
    does: ``delta_rank``, the ``delta_*_norm`` columns, ``delta_p_opt``, ``delta_contribution``
    (c_ref(W; p*)), then ``delta_schatten_p`` and ``delta_contribution_at_p`` at the chosen p. So no
    column mixes the weights' rank with the difference's contribution under one plain name. With the
    singular vectors' comparison (``directions``, SPEC §14b) the table gains its ``delta_intruders``,
    ``delta_overlap_left``, ... columns, as ``to_frame()`` does.
    """
    frame = analysis.profile.to_frame()
    optimal = analysis.evaluate()
    frame["log10_alpha"] = to_log10(analysis.log_alpha)[analysis.profile.layers]
    frame["gamma"] = analysis.gamma
    frame["log10_scale"] = to_log10(analysis.log_scale)
    frame["p"] = terms.p
    if analysis.delta is not None:
        for column, values in delta_columns(analysis, directions).items():
            frame[column] = values
        frame[f"{CENTRED_PREFIX}schatten_p"] = terms.schatten
        frame[f"{CENTRED_PREFIX}contribution_at_p"] = terms.contribution
        return frame
    frame["schatten_p"] = terms.schatten
    frame["contribution"] = terms.contribution
    frame["p_opt"] = analysis.p_opt
    frame["contribution_at_p_opt"] = optimal.contribution
    return frame


def layer_frame(analysis: BoundAnalysis, terms: BoundTerms) -> pd.DataFrame:
    """Per-layer table: log10 alpha, the sum of c(W; p) by kind and in total, and Edelman's xi (an
    encoder-decoder's layers in series, each with its stack; QK_x and V_x empty in the encoder's).
    Centred (``analysis.delta``), the sums and ξ are the difference's: ``delta_sum_c_QK``, ...,
    ``delta_sum_c``, ``delta_log10_xi`` (:func:`terms_frame`)."""
    import pandas as pd

    profile = analysis.profile
    frame = pd.DataFrame({"layer": profile.layers, "kind": profile.kinds, "c": terms.contribution})
    table = frame.pivot_table(index="layer", columns="kind", values="c", aggfunc="sum")
    table = table[[k.value for k in profile.model_kinds if k.value in table.columns]]
    table.columns = [f"sum_c_{k}" for k in table.columns]
    table.insert(0, "log10_alpha", to_log10(analysis.log_alpha))
    table["sum_c"] = terms.per_layer(profile.shape.num_layers)
    table["log10_xi"] = to_log10(analysis.log_xi)
    if analysis.delta is not None:  # the sums of c_ref and ξ of W - W⁰: named as centred (terms_frame)
        table.columns = [c if c == "log10_alpha" else f"{CENTRED_PREFIX}{c}" for c in table.columns]
    table = table.reset_index()
    if profile.shape.encoder_decoder:  # each layer's stack and number within it, beside the layer in series
        shape = profile.shape
        table.insert(1, "stack", [shape.stack_of(layer) for layer in table["layer"]])
        table.insert(2, "stack_layer", [shape.stack_layer(layer) for layer in table["layer"]])
    return table


def singular_values_frame(analysis_or_profile: Any) -> pd.DataFrame:
    """Long table of every singular value: layer, head, kind, index (1-based), sigma, energy."""
    import pandas as pd

    profile = getattr(analysis_or_profile, "profile", analysis_or_profile)
    parts = []
    for i, matrix in enumerate(profile.ids):
        sv = profile.singular_values_of(i)
        parts.append(
            pd.DataFrame(
                {
                    "layer": matrix.layer,
                    "head": matrix.head if matrix.head is not None else pd.NA,
                    **({"expert": "" if matrix.expert is None else str(matrix.expert)} if profile.shape.moe else {}),
                    **stack_fields(matrix, profile.shape),
                    "kind": matrix.kind.value,
                    "index": np.arange(1, sv.size + 1),
                    "sigma": sv,
                    "cumulative_energy": cumulative_energy(sv),
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    frame["head"] = frame["head"].astype("Int64")
    return frame
