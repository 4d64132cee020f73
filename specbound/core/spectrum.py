"""Singular values and matrix norms, in float64, through a linear-algebra backend (:mod:`specbound.core.backend`).

Dense matrices and the feed-forward route live here; the products QK and V of attention heads, which are
never formed, in :mod:`specbound.core.factored`. Singular values are exact to rounding:

* **Gram** (the feed-forward matrices M_in, M_out, n x m with n < m): sigma_i^2 are the eigenvalues
  of the n x n Gram matrix M M^T. Rounding perturbs each eigenvalue by at most about
  c eps sigma_1^2 with c = max(n, m), hence sigma_i by c eps sigma_1^2 / sigma_i. When that bound
  exceeds ``GRAM_RTOL`` sigma_1 (an ill-conditioned or rank-deficient matrix) the dense SVD is used
  instead, so the result always agrees with LAPACK's SVD to about 1e-10 of sigma_1.

The (2,1) and (1,1) norms of a dense matrix are taken block of columns by block of columns, in a
buffer of at most ``PRODUCT_BLOCK_BYTES``.

The small LAPACK calls (QR, small SVDs) run with one BLAS thread (:meth:`Backend.serial_lapack`):
OpenBLAS's spinning threads made them 10 to 90 times slower whenever another process shared the
cores. The matrix products keep every thread; they scale well and did not suffer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .backend import Backend, get_backend
from .defaults import RANK_TOL

#: Largest error, relative to sigma_1, accepted from the Gram route before falling back to an SVD.
GRAM_RTOL: float = 1e-10
#: Largest product buffer of the (1,1) norm of a factored matrix, in bytes (a 2048 x 2048 float64 matrix).
PRODUCT_BLOCK_BYTES: int = 32 * 1024**2

_EPS = float(np.finfo(np.float64).eps)


def singular_values(matrix: np.ndarray, backend: Backend | None = None) -> np.ndarray:
    """All min(n, m) singular values of a dense matrix, descending (Gram route when it is exact)."""
    be = backend or get_backend()
    on_backend = be.array(matrix)
    sv = gram_singular_values(be.gram(on_backend), (matrix.shape[0], matrix.shape[1]), be)
    if sv is not None:
        return sv
    with be.serial_lapack():
        return be.numpy(be.svdvals(on_backend))


def gram_singular_values(gram: object, shape: tuple[int, int], backend: Backend | None = None) -> np.ndarray | None:
    """The singular values of an n x m matrix from its Gram matrix, or None where the Gram route is not
    exact enough (module docstring) and the caller must take the SVD of the matrix itself.

    Separate from :func:`singular_values` so that a caller streaming a large matrix can let go of
    the matrix once its Gram matrix is formed, before the eigen-solve (whose copy of the Gram
    matrix is then the largest array alive).
    """
    be = backend or get_backend()
    n, m = shape
    with be.serial_lapack():
        eig = be.numpy(be.eigvalsh(gram))[::-1]
    sv: np.ndarray = np.sqrt(np.clip(eig, 0.0, None))
    if sv.size and sv[-1] > 0.0:
        error_bound = max(n, m) * _EPS * sv[0] ** 2 / sv[-1]
        if error_bound <= GRAM_RTOL * sv[0]:
            return sv
    return None


@dataclass(frozen=True, eq=False)
class GramAndNorms:
    """The Gram matrix of an n x m matrix on its smaller side, lower triangle only (Fortran order, what
    LAPACK's symmetric eigen-solvers read), with the matrix's (2,1) and (1,1) norms."""

    gram: np.ndarray
    norm_21: float
    norm_11: float


def gram_by_blocks(blocks: Iterable[np.ndarray], shape: tuple[int, int]) -> GramAndNorms:
    """Gram matrix and entrywise norms of an n x m matrix given as float64 blocks along its longer side.

    For n <= m the blocks are column blocks B (n x k) and G = Σ B Bᵀ; else row blocks (k x m) and
    G = Σ Bᵀ B. Each is one in-place BLAS ``dsyrk`` into the lower triangle, so no block's product is
    ever a second min(n, m)² array and the whole matrix is never held: a 4096 x 11008 feed-forward
    matrix (360 MB in float64) is read in 32 MiB blocks beside its 134 MB Gram matrix. The (2,1)
    norm sums whole columns' norms (columns within a column block, squared sums across row blocks).
    """
    from scipy.linalg.blas import dsyrk

    n, m = shape
    columns = n <= m
    size = min(n, m)
    gram = np.zeros((size, size), order="F")
    column_squares = None if columns else np.zeros(m)
    n21 = n11 = 0.0
    for block in blocks:
        gram = dsyrk(1.0, block, beta=1.0, c=gram, trans=0 if columns else 1, lower=1, overwrite_c=1)
        n11 += float(np.abs(block).sum())
        if column_squares is None:
            n21 += float(np.linalg.norm(block, axis=0).sum())
        else:
            column_squares += np.einsum("ij,ij->j", block, block)
    if column_squares is not None:
        n21 = float(np.sqrt(column_squares).sum())
    return GramAndNorms(gram, n21, n11)


def rank_threshold(sigma_max: np.ndarray | float, k: np.ndarray | int, tol: float = RANK_TOL) -> np.ndarray:
    """Cut-off below which a singular value counts as zero: tau k max(sigma_1, 1)."""
    return tol * np.asarray(k, dtype=np.float64) * np.maximum(sigma_max, 1.0)


def norm_21(matrix: np.ndarray) -> np.ndarray:
    """(2,1) norm: the sum over columns j of ||W[:, j]||_2. Batched over leading axes.

    A matrix larger than ``PRODUCT_BLOCK_BYTES`` has its column norms taken block of columns by block
    (each column's reduction is the same, so are the values) instead of through a full-size square.
    """
    if matrix.ndim == 2 and matrix.nbytes > PRODUCT_BLOCK_BYTES:
        width = _block_columns(matrix)
        columns = [np.linalg.norm(matrix[:, j : j + width], axis=0) for j in range(0, matrix.shape[1], width)]
        total: np.ndarray = np.concatenate(columns).sum()
        return total
    result: np.ndarray = np.linalg.norm(matrix, axis=-2).sum(axis=-1)
    return result


def norm_11(matrix: np.ndarray) -> np.ndarray:
    """(1,1) norm: the sum of |W_ij|. Batched over leading axes; a matrix larger than
    ``PRODUCT_BLOCK_BYTES`` is summed block of columns by block (no full-size |W| is made)."""
    if matrix.ndim == 2 and matrix.nbytes > PRODUCT_BLOCK_BYTES:
        width = _block_columns(matrix)
        return np.asarray(sum(float(np.abs(matrix[:, j : j + width]).sum()) for j in range(0, matrix.shape[1], width)))
    result: np.ndarray = np.abs(matrix).sum(axis=(-2, -1))
    return result


def _block_columns(matrix: np.ndarray) -> int:
    return max(1, PRODUCT_BLOCK_BYTES // (8 * int(matrix.shape[0])))


def cumulative_energy(sv: np.ndarray) -> np.ndarray:
    """Fraction of the squared Frobenius norm carried by the top i singular values, along the last axis.

    A zero matrix has no energy: its curve is all zeros.
    """
    energy = np.cumsum(np.square(sv), axis=-1)
    total = energy[..., -1:]
    result: np.ndarray = np.divide(energy, total, out=np.zeros_like(energy), where=total > 0)
    return result
