"""The attention heads' products QK and V, held as their factors: singular values and norms without
ever forming an N x N matrix.

**Singular values** (QK and V, rank <= d). For M = A B with A of shape (n, r) and B of shape (r, m),
take A = Q1 R1 and B^T = Q2 R2; then M = Q1 (R1 R2^T) Q2^T with orthonormal Q1, Q2, so the nonzero
singular values of M are those of the small core R1 R2^T (r x r). Batched over heads. This is the
low-rank trick of TransformerLens' ``FactoredMatrix``; it never forms the n x m product. Under
grouped-query attention several query heads share one key/value factor: its R is computed once and
reused (:class:`FactoredHeads`).

**Entrywise norms of a factored M = A B** (n x m, A = Q R with orthonormal Q):

* (2,1) norm: Σ_j ‖A b_j‖₂ = Σ_j √(b_jᵀ AᵀA b_j) = Σ_j ‖R b_j‖₂, since AᵀA = RᵀR: the column norms
  of the r x m matrix R B, O(r² m) operations with the R already computed for the singular values
  (and numerically the stable form of the Gram expression: no condition number is squared).
* Frobenius norm: √(Σ σᵢ²) of the core's singular values (:class:`~specbound.core.profile.SpectralProfile`).
* (1,1) norm Σ |M_ij|: no identity gives it from the factors, so M is formed block of columns by
  block of columns in a buffer of at most ``PRODUCT_BLOCK_BYTES``: 2 n m r operations per matrix and
  n · (block width) memory, never n x m. On a Llama-7B layer (N = 4096, d = 128, 64 products) that is
  about 2.7e11 multiply-adds, roughly a fifth of the layer's Gram products; at N = 8192 with 128
  products, 2.2e12, again about a fifth. No proxy uses it, so for products larger than the buffer
  it is computed only on request (:data:`~specbound.core.defaults.LARGE_NORM_11`) and NaN otherwise.

When a whole product fits in that buffer (n m 8 bytes <= ``PRODUCT_BLOCK_BYTES``: every head of every
BERT-family encoder, N <= 2048) it is formed whole, one head at a time in a reused buffer, and both
entrywise norms come from it, as they always have: the BERT family's outputs stay bit for bit the same.

The small LAPACK calls (QR, small SVDs) run with one BLAS thread (:meth:`Backend.serial_lapack`),
as in :mod:`specbound.core.spectrum`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backend import Backend, get_backend
from .defaults import LARGE_NORM_11
from .spectrum import PRODUCT_BLOCK_BYTES


@dataclass(frozen=True, eq=False)
class FactoredHeads:
    """H products ``left[left_of[h]] @ right[right_of[h]]`` whose factors some heads share.

    QK of query head h is Q_hᵀ K_g(h): ``left`` holds the H query factors (H, N, d), ``right`` the
    H_kv key factors (H_kv, d, N) and ``right_of`` = g. V_h = V_g(h)ᵀ O_h shares its left factor
    instead. With H_kv = H both index maps are the identity.
    """

    left: np.ndarray  # (P, n, r)
    right: np.ndarray  # (Q, r, m)
    left_of: np.ndarray  # (H,) int
    right_of: np.ndarray  # (H,) int

    @classmethod
    def unshared(cls, left: np.ndarray, right: np.ndarray) -> FactoredHeads:
        heads = np.arange(left.shape[0])
        return cls(left, right, heads, heads)

    @property
    def heads(self) -> int:
        return len(self.left_of)

    def _shared(self) -> bool:
        return not (
            len(self.left) == len(self.right) == self.heads
            and np.array_equal(self.left_of, np.arange(self.heads))
            and np.array_equal(self.right_of, np.arange(self.heads))
        )


@dataclass(frozen=True, eq=False)
class HeadSpectra:
    """Singular values (H, min(n, r, m)) and entrywise norms (H,) of the products of :class:`FactoredHeads`."""

    singular_values: np.ndarray
    norm_21: np.ndarray
    norm_11: np.ndarray


def head_spectra(
    products: FactoredHeads, backend: Backend | None = None, *, large_norm_11: bool = LARGE_NORM_11
) -> HeadSpectra:
    """Singular values and (2,1), (1,1) norms of every product, from the factors (module docstring).

    A product too large to form whole gets its (1,1) norm by blocks only with ``large_norm_11``,
    else NaN (not computed: :data:`specbound.core.defaults.LARGE_NORM_11`).
    """
    be = backend or get_backend()
    left, right = be.array(products.left), be.array(products.right)
    with be.serial_lapack():
        r_left = be.qr_r(left)  # (P, min(n, r), r)
        r_right = be.qr_r(be.transpose(right))  # (Q, min(m, r), r)
        if products._shared():
            r_left_h, r_right_h = be.take(r_left, products.left_of), be.take(r_right, products.right_of)
        else:
            r_left_h, r_right_h = r_left, r_right
        core = be.matmul(r_left_h, be.transpose(r_right_h))  # (H, min(n, r), min(m, r))
        sv = be.numpy(be.svdvals(core))
    n, m = products.left.shape[-2], products.right.shape[-1]
    fits = n * m * 8 <= PRODUCT_BLOCK_BYTES
    if fits and be.host_products:
        n21, n11 = _entrywise_norms_whole(products)
    else:
        n21, n11 = _entrywise_norms_blocked(products, left, right, r_left, be, with_11=fits or large_norm_11)
    be.synchronize()
    return HeadSpectra(sv, n21, n11)


def _entrywise_norms_whole(products: FactoredHeads) -> tuple[np.ndarray, np.ndarray]:
    """(2,1) and (1,1) norms of each product formed whole, one at a time in a reused (n, m) buffer.

    The whole stack would be 56 MB per BERT-base layer and kind, and reading it back from memory
    cost three times as much as the products themselves.
    """
    left, right = products.left, products.right
    buffer = np.empty((left.shape[-2], right.shape[-1]))  # (n, m)
    n21, n11 = np.empty(products.heads), np.empty(products.heads)
    for h, (a, b) in enumerate(zip(products.left_of, products.right_of, strict=True)):
        np.matmul(left[a], np.ascontiguousarray(right[b]), out=buffer)  # (d, n) factors were always contiguous
        n21[h] = np.sqrt(np.einsum("ij,ij->j", buffer, buffer)).sum()  # column norms
        n11[h] = np.abs(buffer, out=buffer).sum()
    return n21, n11


def _entrywise_norms_blocked(
    products: FactoredHeads, left: object, right: object, r_left: object, be: Backend, *, with_11: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(2,1) from R B (r x m per head), (1,1) from column blocks of A B that fit ``PRODUCT_BLOCK_BYTES``
    (NaN without ``with_11``)."""
    n, m = products.left.shape[-2], products.right.shape[-1]
    width = max(1, min(m, PRODUCT_BLOCK_BYTES // (8 * n)))
    n21, n11 = np.empty(products.heads), np.full(products.heads, np.nan)
    for h, (a, b) in enumerate(zip(products.left_of, products.right_of, strict=True)):
        a_h, b_h = left[int(a)], right[int(b)]  # type: ignore[index]  # (n, r), (r, m)
        n21[h] = float(be.column_norm_sum(be.matmul(r_left[int(a)], b_h)))  # type: ignore[index]  # Σ_j ‖R b_j‖
        if not with_11:
            continue
        total = 0.0
        for start in range(0, m, width):
            total += be.abs_sum(be.matmul(a_h, b_h[:, start : start + width]))  # (n, width)
        n11[h] = total
    return n21, n11


def singular_values_factored(left: np.ndarray, right: np.ndarray, backend: Backend | None = None) -> np.ndarray:
    """Singular values of the batched products left @ right, from the factors alone.

    left: (..., n, r), right: (..., r, m). Returns (..., min(n, r, m)) values in descending order;
    the remaining singular values of the n x m product are exactly zero.
    """
    be = backend or get_backend()
    with be.serial_lapack():
        r_left = be.qr_r(be.array(left))  # (..., min(n, r), r)
        r_right = be.qr_r(be.transpose(be.array(right)))  # (..., min(m, r), r)
        core = be.matmul(r_left, be.transpose(r_right))  # (..., min(n, r), min(m, r))
        return be.numpy(be.svdvals(core))


def entrywise_norms_factored(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(2,1) and (1,1) norms of each product left[h] @ right[h], batched over the leading axis
    (the route of :func:`head_spectra`: whole products when they fit the buffer, else from the factors)."""
    return _entrywise_norms(FactoredHeads.unshared(left, right))


def _entrywise_norms(products: FactoredHeads) -> tuple[np.ndarray, np.ndarray]:
    n, m = products.left.shape[-2], products.right.shape[-1]
    if n * m * 8 <= PRODUCT_BLOCK_BYTES:
        return _entrywise_norms_whole(products)
    be = get_backend()
    with be.serial_lapack():
        r_left = be.qr_r(products.left)
    return _entrywise_norms_blocked(products, products.left, products.right, r_left, be)
