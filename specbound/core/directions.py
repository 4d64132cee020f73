"""Where an update points (SPEC §14b): subspace overlap and intruder dimensions of W against W⁰.

A Schatten view of W - W⁰ says how large an update is, not where it points: a fine-tune can keep the
base's singular values and rotate its singular vectors, and LoRA adapters introduce *intruder
dimensions* that full fine-tuning does not (Shuttleworth et al., NeurIPS 2025, "LoRA vs Full
Fine-tuning: An Illusion of Equivalence"), which go with forgetting. For one matrix W and its
reference W⁰, with compact SVDs W = U S Vᵀ and W⁰ = U⁰ S⁰ V⁰ᵀ (the singular vectors of the values
above §3's rank threshold, in descending order) and k' = min(k, rank W):

* **best-match cosine** of the i-th left singular vector of W:  c_i = max_j |u_iᵀ u⁰_j|;
* **intruders** = #{ i <= k' : c_i < ε }, and ``min_cosine`` = min_{i <= k'} c_i. This is the
  detection of ``peft.tuners.lora.intruders`` (defaults k = 10, ε = 0.5, :data:`INTRUDER_K`,
  :data:`INTRUDER_EPS`), which takes U⁰ from the thin SVD of W⁰: the same vectors wherever W⁰ has full
  rank (every trained feed-forward matrix). Where it has not (a head's QK⁰_h has rank <= d in R^N), the
  remaining "singular vectors" are any basis of its null space, a solver's arbitrary choice that a
  best match could land on; they are left out, so a direction new to the base's range counts;
* **overlap** of the top-k subspaces: the cosines of the principal angles between span(U_{k'}) and
  span(U⁰_{k⁰}) (k⁰ = min(k, rank W⁰)) are the singular values of U_{k'}ᵀ U⁰_{k⁰}; ``overlap_left``
  is their sum over k' (their mean, a missing angle counting 0), 1 for the same subspace, and
  ``overlap_right`` the same of V and V⁰;
* **chance level** of a best-match cosine: a random unit vector of R^D against m orthonormal
  vectors has max_j |cos| ≈ √(2 ln m / D) for m ≪ D (the maximum of m half-normal variables of
  variance 1/D); ``chance_cosine`` = √(2 ln k' / D), D the dimension of the left vectors, an
  approximation to read c_i against, not a test;
* **near ties**: singular vectors of a repeated singular value are not unique, so a count can
  depend on the solver there (peft's too). A matrix whose top k' + 1 values of W, or top k⁰ + 1 of W⁰,
  have a relative gap (σ_i - σ_{i+1}) / σ_i below :data:`NEAR_TIE_GAP` = 1e-8 is flagged ``near_tie``;
  the definition is not changed;
* **unchanged**: W = W⁰ bit for bit has 0 intruders, ``min_cosine`` 1 and overlaps 1 by definition.

**Layouts.** Per head, QK_h = Q_h K_g(h) and V_h = V_g(h) O_h in the proxy's own layout (N x N, rank
<= d), from their factors: A = Q₁ R₁ and Bᵀ = Q₂ R₂ give A B = Q₁ (R₁ R₂ᵀ) Q₂ᵀ, so the SVD of the
d x d core, C = U_c S V_cᵀ, gives U = Q₁ U_c and V = Q₂ V_c exactly, never an N x N product. A
feed-forward or expert matrix in the module's own weight layout, as peft reads it: (out, in) for an
``nn.Linear``, (in, out) for GPT-2's ``Conv1D`` (``module_in_out``), through the eigenvectors of its
smaller Gram matrix (:func:`gram_vectors`; a thin SVD where the matrix is ill-conditioned).

Example:
    A base W⁰ (6 x 3) with left vectors e₁, e₂, e₃; its second left vector turned into e₅ (orthogonal to
    all of W⁰'s) is an intruder, the values rescaled with the vectors kept are not:

    >>> import numpy as np
    >>> base = np.zeros((6, 3)); base[[0, 1, 2], [0, 1, 2]] = [3.0, 2.0, 1.0]
    >>> rotated = base.copy(); rotated[1, 1], rotated[4, 1] = 0.0, 2.0
    >>> found = compare_directions(dense_vectors(rotated), dense_vectors(base), DirectionSettings(k=2))
    >>> found.intruders, found.min_cosine, round(found.overlap_left, 6), found.overlap_right
    (1, 0.0, 0.5, 1.0)
    >>> rescaled = base * np.array([5.0, 4.0, 1.0])
    >>> compare_directions(dense_vectors(rescaled), dense_vectors(base), DirectionSettings(k=2)).intruders
    0
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from .architecture import ModelShape
from .defaults import INTRUDER_EPS, INTRUDER_K, NEAR_TIE_GAP, RANK_TOL
from .matrices import LayerSource, attention_heads, mlp_field
from .spectrum import rank_threshold
from .threads import serial_blas
from .values import check_number

__all__ = [
    "DEFAULT_DIRECTIONS",
    "DirectionSettings",
    "Directions",
    "MatrixDirection",
    "SingularVectors",
    "compare_directions",
    "dense_vectors",
    "factored_vectors",
    "gram_vectors",
    "layer_directions",
]


@dataclass(frozen=True)
class DirectionSettings:
    """The top k singular vectors compared and the cosine ε below which one is an intruder (peft's
    defaults, :data:`~specbound.core.defaults.INTRUDER_K` and ``INTRUDER_EPS``).

    Example:
        >>> DirectionSettings().k, DirectionSettings(k=4, eps=0.3).eps
        (10, 0.3)
        >>> DirectionSettings(k=0)
        Traceback (most recent call last):
        ...
        ValueError: the intruders' k must be an integer >= 1, got 0
    """

    k: int = INTRUDER_K
    eps: float = INTRUDER_EPS

    def __post_init__(self) -> None:
        check_number(self.k, "the intruders' k", 1, integer=True)
        check_number(self.eps, "the intruders' eps", 0, 1, open_low=True)


#: peft's k = 10 and ε = 0.5, the settings used when none are given.
DEFAULT_DIRECTIONS = DirectionSettings()


@dataclass(frozen=True, eq=False)
class SingularVectors:
    """A compact SVD W = U diag(s) Vᵀ: the singular values above §3's rank threshold (descending) and
    their vectors, U (rows, r) and V (columns, r)."""

    u: np.ndarray
    s: np.ndarray
    v: np.ndarray

    @property
    def rank(self) -> int:
        return int(self.s.shape[0])


def _compact(u: np.ndarray, s: np.ndarray, v: np.ndarray, dims: int) -> SingularVectors:
    """Keep the values above τ · dims · max(σ₁, 1) (SPEC §3) and their vectors."""
    keep = s > rank_threshold(float(s[0]) if s.size else 0.0, dims, RANK_TOL) if s.size else np.zeros(0, bool)
    r = int(keep.sum())  # s is descending: the kept values are the first r
    return SingularVectors(u[:, :r], s[:r], v[:, :r])


def dense_vectors(matrix: np.ndarray) -> SingularVectors:
    """The compact SVD of a matrix by LAPACK's thin SVD (float64).

    Example:
        >>> dense_vectors(np.diag([2.0, 1.0, 0.0])).rank
        2
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    u, s, vt = np.linalg.svd(matrix, full_matrices=False)  # (n, r), (r,), (r, m)
    return _compact(u, s, vt.T, min(matrix.shape))


#: The Gram route is used while σ_min / σ_max of the kept values stays above this; below it the
#: eigenvectors of σ² lose digits (their error grows as ε (σ₁ / σ_i)²) and the SVD itself is taken.
GRAM_CONDITION: float = 1e-5


def gram_vectors(matrix: np.ndarray) -> SingularVectors:
    """The compact SVD of a matrix through the eigen-decomposition of its smaller Gram matrix: with
    M Mᵀ = U S² Uᵀ (rows <= columns), V = Mᵀ U S⁻¹; with MᵀM = V S² Vᵀ, U = M V S⁻¹. Forming the
    Gram matrix and one product costs 2 m n min(m, n) operations against a thin SVD's many more (a
    thin SVD of a 3072 x 768 matrix computing U took 34 s on two busy cores, this route 5 s). A matrix
    whose kept values span more than 1 / :data:`GRAM_CONDITION` (where the eigenvectors lose digits)
    goes through :func:`dense_vectors` instead.

    Example:
        >>> m = np.random.default_rng(0).standard_normal((9, 4))
        >>> found, exact = gram_vectors(m), dense_vectors(m)
        >>> bool(np.allclose(np.abs(found.u.T @ exact.u), np.eye(4), atol=1e-10))
        True
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    wide = matrix.shape[0] <= matrix.shape[1]
    gram = matrix @ matrix.T if wide else matrix.T @ matrix  # (min(m, n), min(m, n))
    eigenvalues, vectors = np.linalg.eigh(gram)  # ascending
    order = np.argsort(eigenvalues)[::-1]
    s = np.sqrt(np.clip(eigenvalues[order], 0.0, None))
    vectors = vectors[:, order]
    found = _compact(vectors, s, vectors, min(matrix.shape))  # the kept values and their eigenvectors
    if found.rank == 0:
        return SingularVectors(np.zeros((matrix.shape[0], 0)), found.s, np.zeros((matrix.shape[1], 0)))
    if found.s[-1] < GRAM_CONDITION * found.s[0]:
        return dense_vectors(matrix)
    other = (matrix.T @ found.u if wide else matrix @ found.u) / found.s  # the other side's vectors
    return SingularVectors(found.u, found.s, other) if wide else SingularVectors(other, found.s, found.u)


def factored_vectors(left: np.ndarray, right: np.ndarray) -> SingularVectors:
    """The compact SVD of the product ``left @ right`` (n x r times r x m) from its factors (module
    docstring): QR of each factor, the SVD of the r x r core; never the n x m product.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(6, 2)), rng.normal(size=(2, 5))
        >>> found = factored_vectors(a, b)
        >>> found.rank, bool(np.allclose(found.u @ np.diag(found.s) @ found.v.T, a @ b))
        (2, True)
    """
    q1, r1 = np.linalg.qr(np.asarray(left, dtype=np.float64))  # (n, r'), (r', r)
    q2, r2 = np.linalg.qr(np.asarray(right, dtype=np.float64).T)  # (m, r''), (r'', r)
    uc, s, vct = np.linalg.svd(r1 @ r2.T)  # core (r', r'')
    width = s.shape[0]
    return _compact(q1 @ uc[:, :width], s, q2 @ vct[:width].T, min(left.shape[0], right.shape[1]))


@dataclass(frozen=True)
class MatrixDirection:
    """What :func:`compare_directions` finds for one matrix (module docstring); NaN where W has rank 0."""

    intruders: int
    min_cosine: float
    overlap_left: float
    overlap_right: float
    chance_cosine: float
    near_tie: bool
    top_k: int

    @classmethod
    def unchanged(cls, k: int, dim: int) -> MatrixDirection:
        """A matrix left bit for bit as its reference: 0 intruders, cosine and overlaps 1 by definition."""
        return cls(0, 1.0, 1.0, 1.0, _chance(k, dim), False, k)


def _chance(k: int, dim: int) -> float:
    """√(2 ln k / D): about the best |cos| of a random unit vector of R^D against k orthonormal ones."""
    return math.sqrt(2.0 * math.log(k) / dim) if k >= 1 and dim >= 1 else math.nan


def _has_near_tie(s: np.ndarray, count: int) -> bool:
    """Whether the first ``count`` + 1 values (as many as there are) have a relative gap below NEAR_TIE_GAP."""
    top = s[: count + 1]
    if top.size < 2:
        return False
    return bool(np.any((top[:-1] - top[1:]) < NEAR_TIE_GAP * top[:-1]))


def _overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Σ cos θ_i / k over the principal angles between span(a) and span(b) (orthonormal columns)."""
    if k == 0:
        return math.nan
    if b.shape[1] == 0:
        return 0.0
    cosines = np.linalg.svd(a.T @ b, compute_uv=False)  # (min(k', k⁰),)
    return float(np.minimum(cosines, 1.0).sum() / k)


def compare_directions(tuned: SingularVectors, base: SingularVectors, settings: DirectionSettings) -> MatrixDirection:
    """Intruder count, smallest best-match cosine, overlaps and the near-tie flag of W against W⁰
    (module docstring), from their compact SVDs.

    Example:
        >>> m = np.diag([3.0, 2.0, 1.0])
        >>> compare_directions(dense_vectors(m), dense_vectors(m), DirectionSettings()).overlap_left   # k capped at 3
        1.0
    """
    k = min(settings.k, tuned.rank)
    k0 = min(settings.k, base.rank)
    dim = tuned.u.shape[0]
    near_tie = _has_near_tie(tuned.s, k) or _has_near_tie(base.s, k0)
    if k == 0:
        return MatrixDirection(0, math.nan, math.nan, math.nan, math.nan, near_tie, 0)
    u_k = tuned.u[:, :k]  # (D, k')
    if base.rank:
        best = np.abs(u_k.T @ base.u).max(axis=1)  # c_i = max_j |u_iᵀ u⁰_j|, (k',)
    else:
        best = np.zeros(k)
    return MatrixDirection(
        intruders=int((best < settings.eps).sum()),
        min_cosine=float(min(best.min(), 1.0)),
        overlap_left=_overlap(u_k, base.u[:, :k0], k),
        overlap_right=_overlap(tuned.v[:, :k], base.v[:, :k0], k),
        chance_cosine=_chance(k, dim),
        near_tie=near_tie,
        top_k=k,
    )


@dataclass(frozen=True, eq=False)
class Directions:
    """:class:`MatrixDirection` of every proxy matrix, in profile order, as arrays (M,), and the
    settings they were found with. :meth:`fields` names them as the JSON's ``"delta"`` objects do."""

    intruders: np.ndarray  # (M,) int
    min_cosine: np.ndarray  # (M,)
    overlap_left: np.ndarray  # (M,)
    overlap_right: np.ndarray  # (M,)
    chance_cosine: np.ndarray  # (M,)
    near_tie: np.ndarray  # (M,) bool
    top_k: np.ndarray  # (M,) int
    settings: DirectionSettings = DirectionSettings()

    @classmethod
    def of(cls, found: list[MatrixDirection], settings: DirectionSettings) -> Directions:
        """The arrays of a list of per-matrix results (profile order)."""

        def column(name: str, dtype: type) -> np.ndarray:
            return np.array([getattr(item, name) for item in found], dtype=dtype)

        return cls(
            intruders=column("intruders", np.int64),
            min_cosine=column("min_cosine", np.float64),
            overlap_left=column("overlap_left", np.float64),
            overlap_right=column("overlap_right", np.float64),
            chance_cosine=column("chance_cosine", np.float64),
            near_tie=column("near_tie", np.bool_),
            top_k=column("top_k", np.int64),
            settings=settings,
        )

    def fields(self) -> dict[str, np.ndarray]:
        """Per matrix, by the names of the JSON's ``"delta"`` objects (``delta_`` columns of a frame)."""
        return {
            "intruders": self.intruders,
            "min_cosine": self.min_cosine,
            "overlap_left": self.overlap_left,
            "overlap_right": self.overlap_right,
            "chance_cosine": self.chance_cosine,
            "near_tie": self.near_tie,
            "top_k": self.top_k,
        }


Attention = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (query, key, value, attn_out), (out, in)


def _head_directions(
    tuned: Attention, base: Attention, shape: ModelShape, settings: DirectionSettings
) -> Iterator[MatrixDirection]:
    """QK_h for every query head, then V_h, of one attention (self or cross), from the factors."""
    for heads, heads0 in zip(attention_heads(*tuned, shape), attention_heads(*base, shape), strict=True):
        for h in range(heads.heads):
            a, b = heads.left[heads.left_of[h]], heads.right[heads.right_of[h]]  # (N, d), (d, N)
            a0, b0 = heads0.left[heads0.left_of[h]], heads0.right[heads0.right_of[h]]
            if np.array_equal(a, a0) and np.array_equal(b, b0):
                yield MatrixDirection.unchanged(min(settings.k, shape.head_dim), a.shape[0])
                continue
            yield compare_directions(factored_vectors(a, b), factored_vectors(a0, b0), settings)


def layer_directions(
    tuned: LayerSource,
    base: LayerSource,
    shape: ModelShape,
    settings: DirectionSettings = DEFAULT_DIRECTIONS,
    *,
    module_in_out: bool = False,
) -> list[MatrixDirection]:
    """:func:`compare_directions` for every proxy matrix of one layer, in profile order (the heads' QK then V,
    a decoder layer's QK_x then V_x, then each expert's MLP kinds), W read from ``tuned`` and W⁰ from
    ``base``. ``module_in_out``: the family stores its feed-forward weights (in, out), as GPT-2's
    ``Conv1D`` does, and peft reads them so (module docstring). Its LAPACK calls run on one BLAS thread,
    as the engine's small ones do (:func:`~specbound.core.threads.serial_blas`): a head's QR of an
    N x d factor was 60 times slower on two threads of a busy two-core machine.

    Example:
        >>> from specbound.core.matrices import LayerWeights
        >>> rng = np.random.default_rng(0)
        >>> layer = LayerWeights(*(rng.normal(size=(8, 8)) for _ in range(4)),
        ...                      ffn_in=rng.normal(size=(16, 8)), ffn_out=rng.normal(size=(8, 16)))
        >>> [d.intruders for d in layer_directions(layer, layer, ModelShape(1, 8, 2, 16))]
        [0, 0, 0, 0, 0, 0]
    """
    with serial_blas():
        return _layer_directions(tuned, base, shape, settings, module_in_out)


def _layer_directions(
    tuned: LayerSource, base: LayerSource, shape: ModelShape, settings: DirectionSettings, module_in_out: bool
) -> list[MatrixDirection]:
    found: list[MatrixDirection] = []
    for read, read0 in (
        (tuned.attention_weights, base.attention_weights),
        (tuned.cross_attention_weights, base.cross_attention_weights),
    ):
        weights, weights0 = read(), read0()
        if weights is None or weights0 is None:  # no cross-attention in this layer
            continue
        found.extend(_head_directions(weights, weights0, shape, settings))
    for expert in shape.experts:
        for kind in shape.layer_kinds:
            field = mlp_field(kind, expert)
            weight, weight0 = tuned.mlp_weight(field), base.mlp_weight(field)  # (out, in)
            if module_in_out:
                weight, weight0 = weight.T, weight0.T  # Conv1D's (in, out)
            if np.array_equal(weight, weight0):
                found.append(MatrixDirection.unchanged(min(settings.k, min(weight.shape)), weight.shape[0]))
                continue
            found.append(compare_directions(gram_vectors(weight), gram_vectors(weight0), settings))
    return found
