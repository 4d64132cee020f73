"""Every limit of the lab, in one place: what one run, one task and one grid may ask for, and what a
dashboard visitor may ask of a run.

The lab trains small models on a laptop's cores; these numbers keep a typo from starting an hour-long
job (or a week-long grid) and a visitor's run to about a minute. The run specs and tasks
(:mod:`~specbound_lab.train`, :mod:`~specbound_lab.tasks`), the grid (:mod:`~specbound_lab.grid`), the
command line's argument types (:mod:`~specbound_lab.cli`) and the dashboard's Lab form all read them
here. The analysis's own limits (checkpoints, caches, atlases, downloads) are
:mod:`specbound.core.limits`'.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabLimits:
    """What one training run, task and grid may ask for (``specbound lab`` and the run specs)."""

    #: the model: depth, width and heads
    max_layers: int = 12
    max_hidden: int = 512
    max_heads: int = 16
    #: training examples n, and the batch
    max_train: int = 100_000
    #: optimiser steps (and the save and fit-check cadences)
    max_steps: int = 100_000
    #: fresh samples drawn for the test error
    max_test_samples: int = 200_000
    max_seed: int = 2**31 - 1
    #: torch threads of one run, and runs of a sweep at once
    max_threads: int = 64
    max_workers: int = 1024
    #: the learning rate lies in [min_learning_rate, max_learning_rate]
    min_learning_rate: float = 1e-9
    max_learning_rate: float = 1.0
    #: memory one run may take for its samples and activations: bounded by the product of its sizes
    #: (sequence length x samples, batch x heads x length², ...), not by each size alone
    max_run_bytes: int = 1024**3
    #: a task stays a small, classroom-sized problem: its vocabulary (or states, or modulus) and length
    max_vocab: int = 1024
    max_length: int = 512
    #: label noise q lies in [0, max_label_noise): q = 1/2 would make labels independent of the input
    max_label_noise: float = 0.5
    #: runs in one grid (a typo in an axis should not start a week of training)
    max_grid_runs: int = 500


LAB_LIMITS = LabLimits()


@dataclass(frozen=True)
class VisitorCaps:
    """What a dashboard visitor may ask of one run: small enough to finish in about a minute on one
    core; each cap within :data:`LAB_LIMITS` (a test holds it to that)."""

    max_layers: int = 2
    widths: tuple[int, ...] = (16, 32, 64)
    heads: tuple[int, ...] = (1, 2, 4)  # each divides every width above
    max_n_train: int = 2000
    max_label_noise: float = 0.3
    max_steps: int = 600
    max_seed: int = 99
    test_samples: int = 2000  # fresh samples for the test error (standard error at most 0.011)
    checkpoints: int = 4  # saved steps besides step 0
    max_stored_runs: int = 200  # runs kept in the lab store (a few MB each, with their checkpoints)
    max_jobs: int = 2  # trainings at once on the server, whoever started them


VISITOR_CAPS = VisitorCaps()
