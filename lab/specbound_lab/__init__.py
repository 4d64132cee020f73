"""The generalization lab: small Transformers (BERT encoders; GPT-2, Llama and GPT-NeoX decoders) trained
on synthetic tasks with a known population.

Modules: :mod:`.tasks` (the data), :mod:`.train` (one run, checkpoints, measured errors),
:mod:`.trajectory` (bound terms at every checkpoint), :mod:`.measures` (classical complexity measures),
:mod:`.registry` (every measure, one registration each), :mod:`.correlation` (Kendall and granulated
tau, intervals over configurations), :mod:`.robust` (Dziugaite et al.'s couplings), :mod:`.verdict`
(SPEC §13b's verdict of an environment: runs that fit, baselines, strata, the robust view), :mod:`.grid`
(a sweep's runs, presets, grid files), :mod:`.records` (a lab directory's layout and run records),
:mod:`.tables` (runs.csv, correlations.csv, verdict.csv, couplings.csv, robust.csv), :mod:`.claims`
(several writers on one directory), :mod:`.sweep` (running a sweep, resumably), :mod:`.reference` (the
shipped reference sweeps), :mod:`.figures` (its charts) and :mod:`.cli` (``specbound lab ...``).
Importing the package does not import torch or transformers; only training does.

The lab is a package beside the library, not inside it: it imports only specbound's public surface (the
package and the ``__all__`` of its layers, ``tests/lab/test_public_api.py``), and its shipped references
travel in its own distribution (``lab/pyproject.toml``).
"""

__version__ = "0.1.0"
