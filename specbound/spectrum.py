"""Singular values and matrix norms, in float64.

Two routes to singular values, both exact to rounding:

* **factored** (QK and V, rank <= d): for M = A B with A of shape (n, r) and B of shape (r, m),
  take A = Q1 R1 and B^T = Q2 R2; then M = Q1 (R1 R2^T) Q2^T with orthonormal Q1, Q2, so the
  nonzero singular values of M are those of the small core R1 R2^T (r x r). Batched over heads.
  This is the low-rank trick of TransformerLens' ``FactoredMatrix``; it never forms the n x m product.
* **Gram** (the feed-forward matrices M_in, M_out, n x m with n < m): sigma_i^2 are the eigenvalues
  of the n x n Gram matrix M M^T. Rounding perturbs each eigenvalue by at most about
  c eps sigma_1^2 with c = max(n, m), hence sigma_i by c eps sigma_1^2 / sigma_i. When that bound
  exceeds ``GRAM_RTOL`` sigma_1 (an ill-conditioned or rank-deficient matrix) the dense SVD is used
  instead, so the result always agrees with LAPACK's SVD to about 1e-10 of sigma_1.

The LAPACK calls (QR, small SVDs, eigenvalues) run on one BLAS thread (:func:`serial_lapack`): on
problems this small a second thread gains little on an idle machine, while OpenBLAS's spinning
threads made them 10 to 90 times slower whenever another process shared the cores. The matrix
products keep every thread; they scale well and did not suffer.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from .defaults import RANK_TOL

#: Largest error, relative to sigma_1, accepted from the Gram route before falling back to an SVD.
GRAM_RTOL: float = 1e-10

_EPS = float(np.finfo(np.float64).eps)


def serial_lapack() -> threadpool_limits:
    """Context in which BLAS (and so LAPACK) uses one thread (see the module docstring)."""
    return threadpool_limits(limits=1, user_api="blas")


def singular_values_factored(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Singular values of the batched products left @ right, from the factors alone.

    left: (..., n, r), right: (..., r, m). Returns (..., min(n, r, m)) values in descending order;
    the remaining singular values of the n x m product are exactly zero.
    """
    with serial_lapack():
        r_left = np.linalg.qr(left, mode="r")  # (..., min(n, r), r)
        r_right = np.linalg.qr(np.swapaxes(right, -1, -2), mode="r")  # (..., min(m, r), r)
        core = r_left @ np.swapaxes(r_right, -1, -2)  # (..., min(n, r), min(m, r))
        return np.linalg.svd(core, compute_uv=False)


def singular_values(matrix: np.ndarray) -> np.ndarray:
    """All min(n, m) singular values of a dense matrix, descending (Gram route when it is exact)."""
    n, m = matrix.shape
    gram = matrix @ matrix.T if n <= m else matrix.T @ matrix  # (min(n, m), min(n, m))
    with serial_lapack():
        eig = np.linalg.eigvalsh(gram)[::-1]
        sv = np.sqrt(np.clip(eig, 0.0, None))
        if sv.size and sv[-1] > 0.0:
            error_bound = max(n, m) * _EPS * sv[0] ** 2 / sv[-1]
            if error_bound <= GRAM_RTOL * sv[0]:
                return sv
        return np.linalg.svd(matrix, compute_uv=False)


def rank_threshold(sigma_max: np.ndarray | float, k: np.ndarray | int, tol: float = RANK_TOL) -> np.ndarray:
    """Cut-off below which a singular value counts as zero: tau k max(sigma_1, 1)."""
    return tol * np.asarray(k, dtype=np.float64) * np.maximum(sigma_max, 1.0)


def norm_21(matrix: np.ndarray) -> np.ndarray:
    """(2,1) norm: the sum over columns j of ||W[:, j]||_2. Batched over leading axes."""
    return np.linalg.norm(matrix, axis=-2).sum(axis=-1)


def norm_11(matrix: np.ndarray) -> np.ndarray:
    """(1,1) norm: the sum of |W_ij|. Batched over leading axes."""
    return np.abs(matrix).sum(axis=(-2, -1))


def entrywise_norms_factored(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2,1) and (1,1) norms of each product left[h] @ right[h], batched over the leading axis.

    Unlike the singular values these need every entry, so each product is formed, one at a time in
    a reused (n, m) buffer: the whole stack would be 56 MB per BERT-base layer and kind, and reading
    it back from memory cost three times as much as the products themselves.
    """
    heads, n, _ = left.shape
    buffer = np.empty((n, right.shape[-1]))  # (n, m)
    n21, n11 = np.empty(heads), np.empty(heads)
    for h in range(heads):
        np.matmul(left[h], right[h], out=buffer)
        n21[h] = np.sqrt(np.einsum("ij,ij->j", buffer, buffer)).sum()  # column norms
        n11[h] = np.abs(buffer, out=buffer).sum()
    return n21, n11


def cumulative_energy(sv: np.ndarray) -> np.ndarray:
    """Fraction of the squared Frobenius norm carried by the top i singular values, along the last axis.

    A zero matrix has no energy: its curve is all zeros.
    """
    energy = np.cumsum(np.square(sv), axis=-1)
    total = energy[..., -1:]
    return np.divide(energy, total, out=np.zeros_like(energy), where=total > 0)
