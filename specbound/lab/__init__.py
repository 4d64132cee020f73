"""The generalization lab: small BERT encoders trained on synthetic tasks with a known population.

Modules: :mod:`.tasks` (the data), :mod:`.train` (one run, checkpoints, measured errors),
:mod:`.trajectory` (bound terms at every checkpoint), :mod:`.measures` (classical complexity measures),
:mod:`.registry` (every measure, one registration each), :mod:`.correlation` (Kendall and granulated
tau), :mod:`.grid` (a sweep's runs, presets, grid files), :mod:`.records` (a lab directory's layout and
run records), :mod:`.tables` (runs.csv, correlations.csv), :mod:`.claims` (several writers on one
directory), :mod:`.sweep` (running a sweep, resumably), :mod:`.reference` (the shipped reference sweep)
and :mod:`.cli`. Importing the package does not import
torch or transformers; only training does.
"""
