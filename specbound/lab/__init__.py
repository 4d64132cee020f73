"""The generalization lab: small BERT encoders trained on synthetic tasks with a known population.

Modules: :mod:`.tasks` (the data), :mod:`.train` (one run, checkpoints, measured errors),
:mod:`.trajectory` (bound terms at every checkpoint), :mod:`.measures` (classical complexity measures),
:mod:`.correlation` (Kendall and granulated tau), :mod:`.sweep` (grids, resuming, result files),
:mod:`.reference` (the shipped reference sweep) and :mod:`.cli`. Importing the package does not import
torch or transformers; only training does.
"""
