"""Classical complexity measures a generalization course compares with the bound proxies.

All are computed from a :class:`specbound.core.profile.SpectralProfile` (spectral norms, Frobenius norms and
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

Everything is returned as a natural logarithm except the Frobenius sum, which cannot overflow here.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.profile import SpectralProfile


def block_norms(profile: SpectralProfile) -> tuple[np.ndarray, np.ndarray]:
    """(spectral, (2,1)) norm of each of the 4L blocks, heads summed: two (L, 4) arrays (QK, V, M_in, M_out)."""
    L = profile.shape.num_layers
    spectral, norm21 = [], []
    for kind in profile.model_kinds:
        mask = profile.mask(kind)
        spectral.append(profile.spectral_norm[mask].reshape(L, -1).sum(axis=1))  # (L,)
        norm21.append(profile.norm_21[mask].reshape(L, -1).sum(axis=1))  # (L,)
    return np.stack(spectral, axis=1), np.stack(norm21, axis=1)


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
