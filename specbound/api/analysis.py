"""One call from a notebook: :func:`analyze` a model by name or in memory, get every total and table.

``analyze`` takes what a researcher has at hand: a checkpoint directory, a Hub id (``owner/name``,
``owner/name@REVISION``), a miniature alias, an atlas reference, a transformers ``PreTrainedModel``
(read in place: its parameters stay on their device and are converted to float64 one layer at a
time, never written to disk), or a ``state_dict`` with its config. The result is an
:class:`Analysis`: the proxies, the shape, per-matrix and per-layer tables, the same spectra at
other indices (:meth:`Analysis.at`) and the JSON of ``specbound analyze --json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.architecture import Adaptation, ModelShape
from ..core.backend import DEFAULT_BACKEND, DEFAULT_DEVICE, BackendName, BackendSpec
from ..core.bounds import BoundAnalysis, BoundSettings, BoundTerms, PAssignment
from ..core.defaults import DIRECTIONS, INTRUDER_EPS, INTRUDER_K, LARGE_NORM_11
from ..core.directions import DEFAULT_DIRECTIONS, Directions, DirectionSettings
from ..core.logspace import exp_array, to_log10
from ..core.profile import SpectralProfile
from ..core.progress import ProgressCallback, silent
from ..io.centred import Reference, ReferenceKind, directions_of
from ..io.options import ComputeOptions

if TYPE_CHECKING:
    import pandas as pd

    from ..io.checkpoints.checkpoint import Checkpoint


@dataclass(frozen=True, eq=False)
class Analysis:
    """The bound's proxies and terms for one model, at p* and (optionally) at chosen indices.

    ``p`` is what :func:`analyze` (or :meth:`at`) was given: None for p* alone, one index for every
    matrix, or a :class:`~specbound.core.bounds.PAssignment`.

    Example::

        >>> result = specbound.analyze("minilm-l6")
        >>> result.shape.num_layers, result.family
        (6, 'bert')
        >>> round(result.ours_log10, 2) < round(result.edelman_log10, 2)
        True
    """

    bounds: BoundAnalysis
    p: float | PAssignment | None = None
    #: the bound centred at a reference (SPEC §14): the same scales, S_p of W - W⁰; None without one
    centred: BoundAnalysis | None = None
    #: what it is centred at (the model read as W⁰, and whether a base or the initialization)
    reference: Reference | None = None
    #: where each matrix moved (SPEC §14b): intruder dimensions and top-k subspace overlaps of W
    #: against W⁰; None without a reference
    directions: Directions | None = None

    # --- what the model is -----------------------------------------------------------------------
    @property
    def profile(self) -> SpectralProfile:
        return self.bounds.profile

    @property
    def model(self) -> str:
        return self.profile.model

    @property
    def shape(self) -> ModelShape:
        return self.profile.shape

    @property
    def family(self) -> str:
        return self.shape.family

    @property
    def adaptations(self) -> tuple[Adaptation, ...]:
        return self.shape.adaptations

    # --- the totals --------------------------------------------------------------------------------
    @property
    def optimal_terms(self) -> BoundTerms:
        return self.bounds.optimal

    @property
    def terms(self) -> BoundTerms:
        """The terms at ``p`` (at p* when no p was given)."""
        return self.bounds.evaluate(self.p)

    @property
    def ours(self) -> float:
        """The spectrum-adaptive proxy at p* (inf where it overflows float64; see ``ours_log10``)."""
        return self.optimal_terms.total

    @property
    def ours_log10(self) -> float:
        return float(to_log10(self.optimal_terms.log_total))

    @property
    def edelman(self) -> float:
        return self.bounds.edelman

    @property
    def edelman_log10(self) -> float:
        return float(to_log10(self.bounds.log_edelman))

    @property
    def at_p(self) -> float | None:
        """The proxy at ``p``, or None when no p was given."""
        return None if self.p is None else self.terms.total

    @property
    def at_p_log10(self) -> float | None:
        return None if self.p is None else float(to_log10(self.terms.log_total))

    # --- centred at a reference (SPEC §14) ------------------------------------------------------
    def _centred(self) -> BoundAnalysis:
        if self.centred is None:
            raise ValueError("this analysis has no reference: give analyze(..., base=...) for the centred proxies")
        return self.centred

    @property
    def ours_centred(self) -> float:
        """Σ_W c_ref(W; p*_W) + √L with S_p of W - W⁰ and s_W of W (inf where it overflows)."""
        return self._centred().optimal.total

    @property
    def ours_centred_log10(self) -> float:
        return float(to_log10(self._centred().optimal.log_total))

    @property
    def edelman_centred(self) -> float:
        """The Edelman-style proxy with ‖W - W⁰‖₂,₁ in ξ."""
        return self._centred().edelman

    @property
    def edelman_centred_log10(self) -> float:
        return float(to_log10(self._centred().log_edelman))

    # --- other indices, the same spectra ---------------------------------------------------------
    def at(self, p: float | PAssignment | None = None) -> Analysis:
        """The same analysis at other indices: one p for every matrix, an assignment, or None for p*.

        Only the cached spectra are used: no file is read and no SVD runs. The total at any fixed p is
        never below the total at p* (each matrix's p* minimises its own term).

        Example::

            >>> result = specbound.analyze("minilm-l6")
            >>> result.at(p=1.0).at_p >= result.ours
            True
            >>> result.at(specbound.PAssignment(default=0.5, by_kind={specbound.Kind.QK: 0.0})).p.default
            0.5
        """
        if p is not None and not isinstance(p, PAssignment):
            p = float(p)
        self.bounds.evaluate(p)  # a p outside [0, 2] is refused here, not when a total is asked for
        return Analysis(self.bounds, p, self.centred, self.reference, self.directions)

    # --- tables and JSON -------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """One row per matrix: layer, head, kind, rank, norms, γ, s_W, p*, c(W; p*), and p and c(W; p);
        centred at a reference, the difference's ``delta_*`` columns too, where it points among them
        (``delta_intruders``, ``delta_min_cosine``, ``delta_overlap_left``, ``delta_overlap_right``,
        ``delta_chance_cosine``, ``delta_near_tie``, ``delta_top_k``: SPEC §14b).

        Centred (``base=``), the difference's columns follow, named as every table names them
        (:data:`specbound.present.report.CENTRED_PREFIX`): ``delta_rank``, ``delta_spectral_norm``,
        ``delta_frobenius_norm``, ``delta_nuclear_norm``, ``delta_norm_21``, ``delta_p_opt``,
        ``delta_contribution`` (c_ref(W; p*)) and ``delta_contribution_at_p`` (c_ref(W; p)).

        ``scale`` is s_W (inf where it overflows; ``log10_scale`` stands beside it); without a given p,
        ``p`` and ``contribution`` repeat p* and c(W; p*). ``tensors`` names the checkpoint tensors each
        matrix is built from, as the family saves them (``encoder.layer.0.attention.self.query.weight``
        and ``...key.weight`` for a BERT QK head; empty for a family specbound has no adapter for).

        Example::

            >>> frame = specbound.analyze("minilm-l6").to_frame()
            >>> frame.loc[0, "tensors"]
            ('encoder.layer.0.attention.self.query.weight', 'encoder.layer.0.attention.self.key.weight')
        """
        analysis = self.bounds
        frame = self.profile.to_frame()
        from ..io.families import matrix_tensors

        frame["tensors"] = matrix_tensors(self.profile)
        terms = self.terms
        frame["gamma"] = analysis.gamma
        frame["scale"] = exp_array(analysis.log_scale)
        frame["log10_scale"] = to_log10(analysis.log_scale)
        frame["p_opt"] = analysis.p_opt
        frame["contribution_opt"] = analysis.optimal.contribution
        frame["p"] = terms.p
        frame["contribution"] = terms.contribution
        if self.centred is not None:
            from ..present.report import delta_columns

            for column, values in delta_columns(self.centred, self.directions).items():
                frame[column] = values
            frame["delta_contribution_at_p"] = self.centred.evaluate(self.p).contribution
        return frame

    def power_law_frame(self) -> pd.DataFrame:
        """One row per matrix: the power-law fit of its empirical spectral density λ = σ² as WeightWatcher
        0.7.7 fits it (:mod:`specbound.core.heavy_tail`): ``alpha`` (WeightWatcher's ``alpha``),
        ``alpha_weighted`` = α · log10 λ_max (its ``alpha_weighted``, α̂ of Martin & Mahoney), the tail's
        ``xmin`` and size, and the Kolmogorov–Smirnov ``ks_distance``; NaN where a matrix has fewer than
        two eigenvalues above WeightWatcher's floor. Computed from the cached spectra when asked for (a
        second per large feed-forward matrix), not with the analysis.

        Example::

            >>> laws = specbound.analyze("minilm-l6").power_law_frame()
            >>> laws.groupby("kind")["alpha"].median()  # doctest: +SKIP
        """
        from ..core.heavy_tail import power_law_table

        table = power_law_table(self.profile.singular_values, self.profile.above_threshold)
        every = self.profile.to_frame()
        identity = ("layer", "stack", "stack_layer", "head", "expert", "kind", "rank")
        frame = every[[column for column in identity if column in every.columns]].copy()
        frame["alpha"] = table.alpha
        frame["alpha_weighted"] = table.alpha_weighted
        frame["xmin"] = table.xmin
        frame["tail"] = table.tail
        frame["ks_distance"] = table.distance
        return frame

    def layers_frame(self) -> pd.DataFrame:
        """One row per layer: log10 α, the sum of c(W; p) by kind and in total, and log10 ξ.

        Example::

            >>> layers = specbound.analyze("minilm-l6").layers_frame()
            >>> len(layers), float(layers["log10_alpha"].iloc[-1])  # α of the top layer is 1
            (6, 0.0)
        """
        from ..present.report import layer_frame

        return layer_frame(self.bounds, self.terms)

    def to_dict(self) -> dict[str, Any]:
        """The object ``specbound analyze --json [--p P]`` prints (SPEC §5 and §11).

        Example::

            >>> data = specbound.analyze("minilm-l6").to_dict()
            >>> data["num_layers"], len(data["matrices"]), data["adaptations"]
            (6, 156, [])
        """
        from ..present.report import analysis_json, finite_only

        return dict(finite_only(analysis_json(self.bounds, self.p, **self._centred_parts())))

    def to_json(self, *, indent: int | None = None) -> str:
        """Strict JSON of :meth:`to_dict`: the text ``specbound analyze --json`` prints, without its newline.

        Example::

            >>> import json
            >>> json.loads(specbound.analyze("minilm-l6").to_json())["family"]
            'bert'
        """
        from ..present.report import analysis_json, to_json_text

        return to_json_text(analysis_json(self.bounds, self.p, **self._centred_parts()), indent=indent)

    def _centred_parts(self) -> dict[str, Any]:
        """The centred analysis, its reference and its directions, as :func:`analysis_json` takes them."""
        return {"centred": self.centred, "reference": self.reference, "directions": self.directions}

    def __repr__(self) -> str:
        shape = self.shape
        at = "" if self.p is None else f", at_p=10^{self.at_p_log10:.4g}"
        if self.reference is not None:
            at += (
                f", ours_centred=10^{self.ours_centred_log10:.4g} ({self.reference.adaptation} {self.reference.model})"
            )
        return (
            f"Analysis({self.model!r}: {self.family}, L={shape.num_layers} N={shape.hidden_size} "
            f"H={shape.num_heads}, ours=10^{self.ours_log10:.4g}, edelman=10^{self.edelman_log10:.4g}{at})"
        )


def analyze(
    source: Any,
    *,
    config: Any = None,
    p: float | PAssignment | None = None,
    l_phi: float | None = None,
    grid_m: int | None = None,
    name: str | None = None,
    progress: ProgressCallback = silent,
    use_cache: bool = True,
    backend: BackendName = DEFAULT_BACKEND,
    device: str = DEFAULT_DEVICE,
    layer_workers: int | None = None,
    large_norm_11: bool = LARGE_NORM_11,
    base: Any = None,
    base_config: Any = None,
    intruder_k: int = INTRUDER_K,
    intruder_eps: float = INTRUDER_EPS,
    directions: bool = DIRECTIONS,
) -> Analysis:
    """Analyse a model and return its :class:`Analysis`.

    ``source``: a path or name (:func:`specbound.io.models.resolve`: a directory, ``owner/name``,
    ``owner/name@REVISION``, ``L4-H256``, ``atlas:FILE#MODEL``, ``minilm-l6``, a LoRA adapter directory),
    a transformers ``PreTrainedModel``, a peft ``PeftModel``, or a ``state_dict`` (then ``config``, a
    ``PretrainedConfig`` or its dict, is required).
    ``p``: an index for every matrix or a PAssignment, besides p*. ``l_phi``: L_φ (default:
    the activation's constant). ``name``: how a model in memory is labelled (default: its config's
    ``_name_or_path``, else its class). A named model's profile is cached on disk; one in memory never is.
    ``backend`` ("numpy" or "torch") and ``device`` ("cpu", "cuda", "cuda:1", ...) choose where the
    float64 linear algebra runs; ``layer_workers`` how many layers run at once (default: measured per
    shape, :func:`specbound.core.engine.default_workers`); ``large_norm_11`` also the (1,1) norms of QK
    and V matrices too large to form whole (N > 2048; NaN otherwise, :data:`~specbound.core.defaults.LARGE_NORM_11`).

    ``base``: a reference W⁰ of the same family and dimensions (a name or path, a ``PreTrainedModel``,
    or a state_dict with ``base_config``), for the proxies centred at it (SPEC §14,
    :mod:`specbound.io.centred`): ``ours_centred``, ``edelman_centred`` and the difference's columns of
    :meth:`Analysis.to_frame`, and where each matrix moved (SPEC §14b, :attr:`Analysis.directions`):
    intruder dimensions among the top ``intruder_k`` left singular vectors of W whose best |cosine|
    with W⁰'s is below ``intruder_eps`` (peft's defaults 10 and 0.5), and the top-k subspace overlaps.
    That comparison of singular vectors takes about as long again as the centred reading itself:
    ``directions=False`` skips it (:attr:`Analysis.directions` is then None and the centred numbers
    are unchanged; ``intruder_k`` and ``intruder_eps`` then have nothing to set and must stay default).

    A LoRA adapter directory as ``source`` is merged into ``base`` when one is given (a name, a path, or
    a model in memory: that base is then also the reference), else into the base its config records,
    looked for beside the adapter, then in the working directory, then on the Hub
    (:func:`specbound.io.loading.locate_adapter_base`); either way it is centred at that base. A peft
    ``PeftModel`` held in memory is read from its active adapter's own factors, ``W = W⁰ + scale · B A``
    in float64 per LoRA layer (W⁰ recovered where ``merge_adapter()`` merged it in; ``modules_to_save``
    read as trained copies of their originals) and, like an adapter on disk, centred at its own base
    unless ``base`` names another (:mod:`specbound.io.checkpoints.peft_model`); inside peft's
    ``disable_adapter()`` context it is read as its base, as peft's forward computes it (every
    difference of rank 0); the model is left as it was.

    Example::

        >>> result = specbound.analyze("minilm-l6", p=1.0)
        >>> result.p, result.at_p > result.ours
        (1.0, True)
        >>> tuned = specbound.analyze("finetune-full", base="finetune-base")  # the lab's shipped pair
        >>> tuned.reference.adaptation, bool(tuned.ours_centred < tuned.ours)
        ('centred at the base', True)
    """
    settings = BoundSettings(l_phi=l_phi, grid_m=grid_m)
    vectors = DirectionSettings(intruder_k, intruder_eps)  # refused here, before anything is read
    if not directions and vectors != DEFAULT_DIRECTIONS:
        raise ValueError("intruder_k and intruder_eps set the singular vectors' comparison that directions=False skips")
    compute = ComputeOptions(BackendSpec(backend, device), layer_workers, large_norm_11=large_norm_11)
    base_name: str | None = None
    reference: Checkpoint | None = None
    tuned: Checkpoint | None = None
    from ..io.checkpoints.peft_model import is_peft_model

    if is_peft_model(source):  # its tuned weights, centred at its own base unless another is given
        from ..io.checkpoints.peft_model import peft_parts

        if config is not None:
            raise TypeError("a PeftModel brings its own config: give config only with a state_dict")
        parts = peft_parts(source, name)
        source, config, name = parts.tuned, parts.config, parts.model_name
        if base is None:
            base, base_config, base_name = parts.base, parts.config, parts.base_name
    adapter = _adapter_directory(source)
    if adapter is not None and (base is None or isinstance(base, str | Path)):
        from ..io.loading import locate_adapter_base

        base = locate_adapter_base(adapter, None if base is None else str(base))  # read against its base
    if adapter is not None and base is not None and not isinstance(base, str | Path):
        # merged into the base in memory, which is also its reference (never the base its config names)
        reference = _checkpoint(base, base_config, base_name, compute, progress)
        tuned = _adapted(adapter, reference)
        from ..io.loading import checkpoint_profile

        profile = checkpoint_profile(tuned, name=name or str(adapter), options=compute, progress=progress)
    else:
        profile = _profile(
            source,
            config=config,
            name=name,
            progress=progress,
            use_cache=use_cache,
            compute=compute,
            adapter_base=str(base) if isinstance(base, str | Path) else None,
        )
    bounds = BoundAnalysis.from_profile(profile, settings)
    if base is None:
        if base_config is not None:
            raise TypeError("base_config is for a base given as a state_dict: give base= too")
        return Analysis(bounds).at(p)
    from ..io.loading import difference_profile

    if tuned is None or reference is None:
        tuned = _checkpoint(source, config, profile.model, compute, progress, adapter_base=base)
        reference = _checkpoint(base, base_config, base_name, compute, progress)
    delta = difference_profile(
        tuned,
        reference,
        model=f"{profile.model} - {reference.where}",
        options=compute,
        progress=progress,
    )
    centred = BoundAnalysis.from_profile(profile, settings, delta=delta)
    moved = directions_of(tuned, reference, vectors, progress=progress) if directions else None
    label = str(base) if isinstance(base, str | Path) else reference.where
    return Analysis(bounds, None, centred, Reference(label, ReferenceKind.BASE), moved).at(p)


def _adapter_directory(source: Any) -> Path | None:
    """The LoRA adapter directory ``source`` names, else None (a model in memory, any other name)."""
    if not isinstance(source, str | Path):
        return None
    from ..io.loading import adapter_directory

    return adapter_directory(str(source))


def _adapted(directory: Path, base: Checkpoint) -> Checkpoint:
    from ..io.checkpoints.lora import open_adapter

    return open_adapter(directory, base)


def _checkpoint(
    source: Any,
    config: Any,
    name: str | None,
    compute: ComputeOptions,
    progress: ProgressCallback,
    *,
    adapter_base: Any = None,
) -> Checkpoint:
    """The weights of a model or reference, opened to be read layer by layer (a name, a path, a
    PreTrainedModel, or a state_dict with its config)."""
    from ..io.checkpoints.checkpoint import Checkpoint
    from ..io.loading import open_weights

    if isinstance(source, str | Path):
        if config is not None:
            raise TypeError("a config goes with a state_dict; a named model brings its own config.json")
        merged_into = str(adapter_base) if isinstance(adapter_base, str | Path) else None
        return open_weights(
            str(source), adapter_base=merged_into, progress=progress, max_download_bytes=compute.max_download_bytes
        )
    config_dict, label, state = _in_memory(source, config, name)
    return Checkpoint.from_state_dict(config_dict, state, label)


def _in_memory(source: Any, config: Any, name: str | None) -> tuple[dict[str, Any], str, Mapping[str, Any]]:
    """(config as a dict, label, state dict) of a PreTrainedModel or of a state_dict with its config."""
    if hasattr(source, "state_dict") and hasattr(source, "config"):  # a transformers PreTrainedModel
        if config is not None:
            raise TypeError("a PreTrainedModel brings its own config: give config only with a state_dict")
        config_dict = _config_dict(source.config)
        return config_dict, name or _default_name(config_dict, type(source).__name__), source.state_dict()
    if isinstance(source, Mapping):
        if config is None:
            raise TypeError("a state_dict needs its config: analyze(state_dict, config=model.config)")
        config_dict = _config_dict(config)
        return config_dict, name or _default_name(config_dict, "state_dict"), source
    raise TypeError(
        f"cannot analyse a {type(source).__name__}: give a path or model name, a transformers "
        "PreTrainedModel, or a state_dict with its config"
    )


def _profile(
    source: Any,
    *,
    config: Any,
    name: str | None,
    progress: ProgressCallback,
    use_cache: bool,
    compute: ComputeOptions,
    adapter_base: str | None = None,
) -> SpectralProfile:
    from ..io.loading import load_profile, profile_in_memory

    if isinstance(source, str | Path):
        if config is not None:
            raise TypeError("config is for a state_dict; a named model brings its own config.json")
        return load_profile(str(source), compute, progress=progress, use_cache=use_cache, adapter_base=adapter_base)
    config_dict, label, state = _in_memory(source, config, name)
    return profile_in_memory(
        config_dict,
        state,
        name=label,
        options=compute,
        progress=progress,
    )


def _config_dict(config: Any) -> dict[str, Any]:
    """A config as config.json holds it: a PretrainedConfig's ``to_dict()``, or a dict (copied)."""
    if hasattr(config, "to_dict"):
        values = config.to_dict()
    elif isinstance(config, Mapping):
        values = dict(config)
    else:
        raise TypeError(f"config must be a PretrainedConfig or a dict, not {type(config).__name__}")
    result: dict[str, Any] = json.loads(json.dumps(values, default=str))  # plain JSON values, as read from a file
    return result


def _default_name(config: Mapping[str, Any], fallback: str) -> str:
    named = config.get("_name_or_path")
    return f"{named} (in memory)" if isinstance(named, str) and named else f"{fallback} (in memory)"
