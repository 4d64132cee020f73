"""Classical complexity measures a generalization course compares with the bound proxies.

All are computed from a :class:`specbound.core.SpectralProfile` (spectral norms, Frobenius norms and
(2,1) norms of the L (2H + 2) proxy matrices), so they see exactly the matrices the bound sees:

* ``frobenius``: sum over all proxy matrices of ||W||_F^2.
* ``spectral_product``: ln of the product of spectral norms over the 4L "blocks" of the network: per
  layer the attention scores (QK), the value path (V), M_in and M_out. Heads act in parallel, so a
  block's norm is the sum over heads, sum_h ||W_h||_2 (an upper bound on the norm of their sum),
  instead of a product over heads.
* ``bartlett``: the spectral complexity of Bartlett, Foster & Telgarsky (2017, "Spectrally-normalized
  margin bounds for neural networks") with reference matrices 0 and 1-Lipschitz activations, over the
  same 4L blocks:

      R = (prod_b ||A_b||_2) * (sum_b (||A_b||_{2,1} / ||A_b||_2)^(2/3))^(3/2)

  with ||A_b||_2 = sum_h ||W_h||_2 and ||A_b||_{2,1} = sum_h ||W_h||_{2,1} (exact for the (2,1) norm
  of the heads' matrices placed side by side). The (2,1) norm is the sum of column 2-norms, as in
  :mod:`specbound.core.spectrum`.

Jiang et al. (2020, "Fantastic generalization measures and where to find them", §C) also measure
the distance from the initialization W⁰, the reference matrices Bartlett et al. allow. With the
profile of the differences W - W⁰ beside that of W (``delta``, the same matrices in the same order):

* ``frobenius_distance``: sum over all proxy matrices of ||W - W⁰||_F^2 (Jiang et al.'s
  "distance from initialization");
* ``spectral_init``: ln of Jiang et al.'s "spectral norm, initialization-centred" measure (after
  Neyshabur et al. 2018), prod_b ||A_b||_2^2 * sum_b ||A_b - A⁰_b||_F^2 / ||A_b||_2^2, with
  ||A_b - A⁰_b||_F^2 = sum_h ||W_h - W⁰_h||_F^2 (the heads' matrices side by side);
* ``bartlett_init``: Bartlett et al.'s complexity with reference matrices M_b = A⁰_b,
  (prod_b ||A_b||_2) * (sum_b (||A_b - A⁰_b||_{2,1} / ||A_b||_2)^(2/3))^(3/2).

The scales ||A_b||_2 stay those of W, as in Bartlett et al.'s statement: only the distances are taken
from the reference. A model at its reference has distance 0 and ``bartlett_init`` of -inf.

Everything is returned as a natural logarithm except the Frobenius sums, which cannot overflow here.
"""

from __future__ import annotations

import math

import numpy as np

from specbound.core import SpectralProfile


def _per_block(profile: SpectralProfile, values: np.ndarray) -> np.ndarray:
    """Sum of a per-matrix quantity over each block's heads: (L, 4) (QK, V, M_in, M_out)."""
    L = profile.shape.num_layers
    return np.stack([values[profile.mask(kind)].reshape(L, -1).sum(axis=1) for kind in profile.model_kinds], axis=1)


def block_norms(profile: SpectralProfile) -> tuple[np.ndarray, np.ndarray]:
    """(spectral, (2,1)) norm of each of the 4L blocks, heads summed: two (L, 4) arrays (QK, V, M_in, M_out)."""
    return _per_block(profile, profile.spectral_norm), _per_block(profile, profile.norm_21)


def frobenius_sum(profile: SpectralProfile) -> float:
    """sum over the L (2H + 2) proxy matrices of ||W||_F^2."""
    return float(np.square(profile.frobenius_norm).sum())


def log_spectral_product(profile: SpectralProfile) -> float:
    """ln prod_b ||A_b||_2 over the 4L blocks (-inf if a block is zero)."""
    spectral, _ = block_norms(profile)
    with np.errstate(divide="ignore"):
        return float(np.log(spectral).sum())


def log_bartlett(profile: SpectralProfile) -> float:
    """ln of Bartlett et al.'s spectral complexity over the 4L blocks (a zero block adds no ratio term)."""
    spectral, norm21 = block_norms(profile)
    ratios = np.divide(norm21, spectral, out=np.zeros_like(norm21), where=spectral > 0)
    total = float(np.power(ratios, 2.0 / 3.0).sum())
    if total == 0.0:
        return -math.inf
    return log_spectral_product(profile) + 1.5 * math.log(total)


def frobenius_distance(delta: SpectralProfile) -> float:
    """sum over the proxy matrices of ||W - W⁰||_F^2, from the profile of the differences."""
    return frobenius_sum(delta)


def log_spectral_init(profile: SpectralProfile, delta: SpectralProfile) -> float:
    """ln (prod_b ||A_b||_2^2 * sum_b ||A_b - A⁰_b||_F^2 / ||A_b||_2^2) over the 4L blocks (-inf at the
    reference; a zero block of W adds no ratio term)."""
    spectral, _ = block_norms(profile)
    distance = _per_block(profile, np.square(delta.frobenius_norm))
    ratios = np.divide(distance, np.square(spectral), out=np.zeros_like(distance), where=spectral > 0)
    total = float(ratios.sum())
    if total == 0.0:
        return -math.inf
    return 2.0 * log_spectral_product(profile) + math.log(total)


def log_bartlett_init(profile: SpectralProfile, delta: SpectralProfile) -> float:
    """ln of Bartlett et al.'s spectral complexity with the reference's blocks as reference matrices
    (-inf at the reference)."""
    spectral, _ = block_norms(profile)
    distance = _per_block(profile, delta.norm_21)
    ratios = np.divide(distance, spectral, out=np.zeros_like(distance), where=spectral > 0)
    total = float(np.power(ratios, 2.0 / 3.0).sum())
    if total == 0.0:
        return -math.inf
    return log_spectral_product(profile) + 1.5 * math.log(total)
