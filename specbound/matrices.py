"""The proxy matrices of one encoder layer, built from Hugging Face weights.

Orientation, stated once for the whole package: Hugging Face stores ``nn.Linear.weight`` as
(out, in) and computes ``x @ weight.T``. The analysis uses the row-vector convention x -> x W, so
every proxy matrix is built from the transposed weight. With H heads of size d = N / H and the head
slice s = [h d, (h + 1) d):

    QK_h  = W_Q[s, :]^T  W_K[s, :]          (N x N, rank <= d)
    V_h   = W_V[s, :]^T  (W_O^T)[s, :]      (N x N, rank <= d; W_O is attention.output.dense)
    M_in  = (intermediate.dense.weight)^T   (N x d_ff)
    M_out = (output.dense.weight)^T         (d_ff x N)

QK and V are kept as their two factors (N x d and d x N): their singular values come from the
factors without forming the N x N product (see :mod:`specbound.spectrum`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np


class Kind(str, Enum):
    """The four kinds of proxy matrix, in the order they are listed within a layer."""

    QK = "QK"
    V = "V"
    M_IN = "M_in"
    M_OUT = "M_out"


@dataclass(frozen=True)
class EncoderShape:
    """The sizes the analysis needs: L layers of width N with H heads and a d_ff-wide MLP."""

    num_layers: int
    hidden_size: int
    num_heads: int
    ffn_size: int

    def __post_init__(self) -> None:
        for name in ("num_layers", "hidden_size", "num_heads", "ffn_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)}")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden size {self.hidden_size} is not divisible by {self.num_heads} attention heads")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def matrices_per_layer(self) -> int:
        return 2 * self.num_heads + 2

    @property
    def num_matrices(self) -> int:
        """L (2H + 2): H query-key and H value matrices plus M_in and M_out per layer."""
        return self.num_layers * self.matrices_per_layer


@dataclass(frozen=True, eq=False)
class LayerWeights:
    """The six weight matrices of one layer, as stored by Hugging Face: (out, in), float64."""

    query: np.ndarray  # (N, N)
    key: np.ndarray  # (N, N)
    value: np.ndarray  # (N, N)
    attn_out: np.ndarray  # (N, N)  attention.output.dense
    ffn_in: np.ndarray  # (d_ff, N)  intermediate.dense
    ffn_out: np.ndarray  # (N, d_ff)  output.dense

    @staticmethod
    def expected_shapes(shape: EncoderShape) -> dict[str, tuple[int, int]]:
        """(out, in) shape of each field for an encoder of ``shape``."""
        n, f = shape.hidden_size, shape.ffn_size
        return {
            "query": (n, n),
            "key": (n, n),
            "value": (n, n),
            "attn_out": (n, n),
            "ffn_in": (f, n),
            "ffn_out": (n, f),
        }


@dataclass(frozen=True, eq=False)
class LayerFactors:
    """Row-vector proxy matrices of one layer; QK and V as batched factor pairs (left @ right)."""

    qk_left: np.ndarray  # (H, N, d)  W_Q[s, :]^T per head
    qk_right: np.ndarray  # (H, d, N)  W_K[s, :]
    v_left: np.ndarray  # (H, N, d)  W_V[s, :]^T
    v_right: np.ndarray  # (H, d, N)  (W_O^T)[s, :]
    m_in: np.ndarray  # (N, d_ff)
    m_out: np.ndarray  # (d_ff, N)

    def qk(self) -> np.ndarray:
        """Dense QK matrices, (H, N, N). For norms and tests, never for singular values."""
        return self.qk_left @ self.qk_right

    def v(self) -> np.ndarray:
        """Dense V matrices, (H, N, N)."""
        return self.v_left @ self.v_right


def head_rows(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """Split the output rows of an (N, N_in) weight into H head slices: (H, d, N_in).

    Row block h is weight[h d:(h + 1) d, :], the slice s of the table in the module docstring.
    """
    n_out, n_in = weight.shape
    return weight.reshape(num_heads, n_out // num_heads, n_in)  # (H, d, N_in)


def layer_factors(weights: LayerWeights, num_heads: int) -> LayerFactors:
    """Build the proxy matrices of a layer from its Hugging Face weights (see the module docstring)."""
    q = head_rows(weights.query, num_heads)  # (H, d, N)
    k = head_rows(weights.key, num_heads)  # (H, d, N)
    v = head_rows(weights.value, num_heads)  # (H, d, N)
    # (W_O^T)[s, :] takes the rows of W_O^T, i.e. the input columns of W_O that read head h.
    o = head_rows(weights.attn_out.T, num_heads)  # (H, d, N)
    return LayerFactors(
        qk_left=q.transpose(0, 2, 1),  # (H, N, d)
        qk_right=k,
        v_left=v.transpose(0, 2, 1),  # (H, N, d)
        v_right=o,
        m_in=weights.ffn_in.T,  # (N, d_ff)
        m_out=weights.ffn_out.T,  # (d_ff, N)
    )
