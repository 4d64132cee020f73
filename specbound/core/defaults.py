"""Every default of the analysis, in one place.

The dashboard, the CLI and the maths read these names; nothing else repeats the numbers.
"""

from __future__ import annotations

#: Upper bound on the Lipschitz constant of GELU, the activation of BERT's feed-forward block.
L_PHI: float = 1.13

#: sup |φ′| of each activation a config may name (SPEC §11), the default L_φ of its model: GELU and its
#: tanh and fast variants 1.13 (the paper's value), ReLU 1, SiLU / swish and quick_gelu (x σ(1.702 x))
#: 1.0998. Any other activation is refused by name.
ACTIVATION_LIPSCHITZ: dict[str, float] = {
    **dict.fromkeys(("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate"), L_PHI),
    "relu": 1.0,
    **dict.fromkeys(("silu", "swish", "quick_gelu"), 1.0998),
}

#: Relative tolerance tau of the numerical rank: sigma_i counts when sigma_i > tau * k * max(sigma_1, 1).
RANK_TOL: float = 1e-10

#: Upper end of the Schatten index range [0, P_MAX] covered by the theorem (p = 2 is Frobenius).
P_MAX: float = 2.0
#: The landmark indices every matrix may be read at besides its own p*: the rank (0), the nuclear norm
#: (1) and the Frobenius norm (2). Trajectories, the scaling study and the lab record "ours" at each.
FIXED_P: tuple[float, ...] = (0.0, 1.0, P_MAX)

#: The model the CLI and the dashboard open when none is named (shipped inside a PyPI package).
DEFAULT_MODEL: str = "minilm-l6"

#: Environment variable that overrides where spectral profiles are cached.
CACHE_ENV_VAR: str = "SPECBOUND_CACHE"

#: Standard deviation of BERT's weight initialisation N(0, initializer_range^2) (config.json's default).
BERT_INITIALIZER_RANGE: float = 0.02

#: Whether the (1,1) norm of a factored QK or V matrix too large to form whole (N x N above
#: spectrum.PRODUCT_BLOCK_BYTES, N > 2048: 7B-class decoders) is computed. It costs 2 N² d operations per
#: matrix, about a fifth of such a layer's work, and no proxy uses it, so it is opt-in (``--norm-11``)
#: and reported as null (NaN in a profile) otherwise. Every smaller product gives it as always.
LARGE_NORM_11: bool = False

#: Seed of the random-initialised twin when none is given.
TWIN_SEED: int = 0

#: Intruder dimensions (SPEC §14b), peft's defaults (``peft.tuners.lora.intruders``): the top k left
#: singular vectors of a fine-tuned matrix are compared with its reference's, and one whose best
#: |cosine| with any of them is below ε is an intruder.
INTRUDER_K: int = 10
INTRUDER_EPS: float = 0.5
#: Whether a centred analysis also compares singular vectors (intruder dimensions and subspace overlaps,
#: SPEC §14b). On by default; it takes about as long again as the centred reading, so the API's
#: ``directions=False``, the CLI's ``--no-directions`` and the Compare page's switch turn it off.
DIRECTIONS: bool = True
#: A relative gap (σ_i - σ_{i+1}) / σ_i below this among the top-k singular values flags a near tie:
#: the singular vectors there are not unique, so a count may depend on the solver.
NEAR_TIE_GAP: float = 1e-8
