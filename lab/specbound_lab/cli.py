"""Command line of the lab: ``specbound lab train | sweep | show | remeasure``.

Registered by :func:`add_lab_commands`, which ``specbound.cli.build_parser`` finds through the
``specbound.commands`` entry point that this package declares (``lab/pyproject.toml``). Per-run lines go to stdout;
the progress bar goes to stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specbound.core import ProgressCallback, ProgressEvent, check_number, silent

from .limits import LAB_LIMITS
from .tasks import Task
from .train import FAMILIES, Family, TrainSettings, family_of, task_of

if TYPE_CHECKING:
    from .correlation import MeasureCorrelation
    from .grokking import LeadSummary, RunGrokking
    from .reference import ShippedReference
    from .tables import LabResults
    from .train import RunSpec
    from .trajectory import RunTrajectory

_DEFAULTS = TrainSettings()
LAB_MODELS = "small BERT encoders trained by the specbound lab on the sparse threshold task (not BERT Miniatures)"
_TASK_HELP = (
    "threshold: the sparse threshold task (default); parity: parity of 3 of 16 binary tokens; modular: "
    "(a + b) mod 97, n_train of the 9409 pairs for training, the rest for test; markov: next-token "
    "prediction on a random sparse Markov chain (decoders only; the gap is on the loss)"
)
_FAMILY_HELP = (
    "bert: BERT encoder (default); gpt2; llama: grouped-query (H/2 key/value heads), gated MLP; "
    "neox: GPT-NeoX with parallel residual"
)


def _bounded(
    convert: Callable[[str], Any], low: float, high: float, *, high_open: bool = False
) -> Callable[[str], Any]:
    """An argparse type: ``convert`` the text and require low <= value <= high (< high if high_open),
    by :func:`~specbound.core.check_number`."""
    integer = convert is int

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if integer else 'a number'}") from None
        check_number(
            value, "the value", low, high, integer=integer, open_high=high_open, error=argparse.ArgumentTypeError
        )
        return value

    return parse


_layers = _bounded(int, 1, LAB_LIMITS.max_layers)
_hidden = _bounded(int, 2, LAB_LIMITS.max_hidden)
_heads = _bounded(int, 1, LAB_LIMITS.max_heads)
_n_train = _bounded(int, 1, LAB_LIMITS.max_train)
_noise = _bounded(float, 0.0, LAB_LIMITS.max_label_noise, high_open=True)
_steps = _bounded(int, 1, LAB_LIMITS.max_steps)
_seed = _bounded(int, 0, LAB_LIMITS.max_seed)
_workers = _bounded(int, 1, LAB_LIMITS.max_workers)
_test_samples = _bounded(int, 1, LAB_LIMITS.max_test_samples)
_learning_rate = _bounded(float, LAB_LIMITS.min_learning_rate, LAB_LIMITS.max_learning_rate)
_batch_size = _bounded(int, 1, LAB_LIMITS.max_train)
_weight_decay = _bounded(float, 0.0, 1.0)
#: The help of ``--until-fit`` (train and sweep).
_NO_COMPILE_HELP = (
    "evaluate eagerly: no torch.compile'd evaluation graph for the fit checks, error measurements and "
    "flatness searches (by default one per architecture and process, used where compiling pays)"
)
_UNTIL_FIT_HELP = (
    "train each classification run until it fits its training set (cross-entropy <= 0.01 on the whole set, "
    "or no training error with noisy labels; checked every --fit-every steps), --steps being the cap; a "
    "next-token run trains its steps"
)
#: The help of ``--fit-every`` (train and sweep).
_FIT_EVERY_HELP = (
    "with --until-fit, check the fit every k steps on the training set alone (default: at every checkpoint); "
    "the run is saved where it fits"
)


class _RunProgress:
    """One progress line per run on stderr (a terminal only): the stage, a bar and the detail."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, event: ProgressEvent) -> None:
        fraction = event.fraction or 0.0
        bar = "#" * int(30 * fraction) + "-" * (30 - int(30 * fraction))
        sys.stderr.write(f"\r{event.stage:<8} [{bar}] {event.done:.0f}/{event.total or 0:.0f} {self.name[:48]:<48}")
        if event.stage == "analyse" and fraction >= 1.0:
            sys.stderr.write("\r" + " " * 100 + "\r")
        sys.stderr.flush()


def _progress(name: str) -> ProgressCallback:
    return _RunProgress(name) if sys.stderr.isatty() else silent


def _report(line: str) -> None:
    print(line, flush=True)


def _interval(low: float, high: float) -> str:
    return "n/a" if math.isnan(low) or math.isnan(high) else f"[{low:+.3f}, {high:+.3f}]"


def _gap_words(causal: bool) -> str:
    """The gap a table correlates with: on the loss for next-token prediction, else on the error."""
    return "test - train loss" if causal else "test - train error"


def _print_correlations(results: LabResults) -> None:
    """The correlation table of each environment (one block when the directory has one), then the
    robust view when there are several."""
    environments = results.environments
    if len(environments) <= 1:
        causal = bool(environments) and environments[0].task.causal
        _print_table(results.correlations, len(results.runs), _gap_words(causal))
    else:
        for env in environments:
            print(f"== environment {env.environment} ({env.runs} runs)")
            _print_table(env.correlations, env.runs, _gap_words(env.task.causal))
    _print_verdicts(results)
    _print_forgetting(results)
    _print_robust(results)
    _print_grokking(results)


def _print_forgetting(results: LabResults) -> None:
    """In a fine-tuning environment whose runs recorded forgetting: whether intruder dimensions and the
    centred proxies order it and the gap (:func:`~specbound_lab.verdict.forgetting_verdicts`), a table of
    each measure's τ with both, its interval and its Holm-adjusted test, then the sentences."""
    from .registry import is_baseline
    from .views import forgetting_sentences

    for row in results.forgetting:
        print(f"Forgetting (error on the base's own task) and the gap in {row.environment}:")
        if row.counted:
            width = max(len(m.measure) for m in row.forgetting.measures) + 2
            print(
                f"{'measure':>{width}}  {'tau forg':>8}  {'95 % (configs)':>15}  {'vs base':>8}  "
                f"{'tau gap':>8}  {'95 % (configs)':>15}  {'vs base':>8}  {'tied':>5}"
            )
            for m in row.forgetting.measures:
                cells = []
                for env in (row.forgetting, row.gap):
                    n = env.measure(m.measure)
                    test = env.test_of(m.measure)
                    interval = _interval(n.kendall_tau_ci.low, n.kendall_tau_ci.high)
                    against = "" if test is None else test.verdict.value[:8]
                    cells.append(f"{_cell(n.kendall_tau, 8, True)}  {interval:>15}  {against:>8}")
                mark = " *" if is_baseline(m.measure) else "  "
                print(f"{m.measure + mark:>{width}}  {cells[0]}  {cells[1]}  {m.tied_pairs:>5}")
            print("  (* a trivial baseline; vs base: against the strongest one, Holm-adjusted over the candidates)")
        for sentence in forgetting_sentences(row):
            print(f"  {sentence}")


#: At most this many runs are listed one by one in the grokking view (a class sweep has 48).
_GROK_RUNS_LISTED = 12


def _print_grokking(results: LabResults) -> None:
    """For the modular task's runs: when each fitted and jumped, and each measure's lead over the seeds
    that grokked (:mod:`specbound_lab.grokking`)."""
    from .grokking import grokking_runs, grokking_sentence, grokking_verdict

    runs = grokking_runs(results.runs)
    if not runs:
        return
    print(
        "Grokking (modular task): a curve (a running median over 3 checkpoints) moves when it has covered half "
        "its excursion from the step training accuracy reaches 0.99; lead = test accuracy's move step - the "
        "measure's (positive: earlier); null: the 95th percentile of the median lead over curves shifted circularly "
        "within a window around each jump; a verdict needs 10 seeds, and is inconclusive where the positive "
        "control or the power check fails"
    )
    _print_grokking_runs(runs)
    checked = grokking_verdict(runs)
    if not checked.summaries:
        print("  no run grokked: there is no lead to report")
        return
    _print_leads(checked.summaries)
    print(f"  {grokking_sentence(runs, verdict=checked)}")


def _print_grokking_runs(runs: Sequence[RunGrokking]) -> None:
    """How many runs grok, then (at most :data:`_GROK_RUNS_LISTED` of them) when each fitted and jumped."""
    grokked = sum(run.event.grokked for run in runs)
    listed = len(runs) <= _GROK_RUNS_LISTED
    print(f"  {grokked} of {len(runs)} runs grok" + (":" if listed else f" (listed when at most {_GROK_RUNS_LISTED})"))
    for run in runs if listed else ():
        event = run.event
        verdict = "groks" if event.grokked else "does not grok"
        if event.saturation_step is None:
            print(
                f"  {run.name}: {verdict}: training accuracy never reaches 0.99 (it ends at "
                f"{run.train_accuracy[-1]:.3f}, test accuracy at {event.final_test_accuracy:.3f})"
            )
            continue
        moves = "does not move after it" if event.jump_step is None else f"moves at step {event.jump_step}"
        print(
            f"  {run.name}: {verdict}: training accuracy 0.99 at step {event.saturation_step}, test accuracy "
            f"{event.test_accuracy_at_saturation:.3f} then; test accuracy {moves} and ends at "
            f"{event.final_test_accuracy:.3f}"
        )


def _print_leads(summaries: Sequence[LeadSummary]) -> None:
    """Each measure's lead over the seeds that grokked: median, range, share before, the null's p95, verdict."""
    width = max(len(s.measure) for s in summaries)
    print(
        f"{'measure':>{width}}  {'seeds':>5}  {'median lead':>11}  {'range':>17}  {'before':>6}  {'null p95':>8}  "
        "verdict"
    )
    for s in summaries:
        span = f"[{s.low:+.0f}, {s.high:+.0f}]" if s.finite.size else "-"
        median = f"{s.median:+.0f}" if s.finite.size else "-"
        null = f"{s.null_p95:+.0f}" if math.isfinite(s.null_p95) else "-"
        print(
            f"{s.measure:>{width}}  {len(s.leads):>5}  {median:>11}  {span:>17}  {s.share_before:>6.2f}  {null:>8}  "
            f"{s.verdict}"
        )


def _cell(value: float, size: int, signed: bool = False) -> str:
    if math.isnan(value):
        return f"{'n/a':>{size}}"
    return f"{value:>+{size}.3f}" if signed else f"{value:>{size}.3f}"


def _print_verdicts(results: LabResults) -> None:
    """SPEC §13b's verdict of each environment (:mod:`.verdict`): what it stands on, then per measure
    (the trivial baselines marked) τ with its configuration-bootstrap interval, τ within strata of n
    and of the parameter count, the granulated τ and the seed noise, the pooled sign-error with its
    tied pairs, censored runs and the coupled sign-errors; then the sentences those numbers say."""

    from .registry import is_baseline
    from .views import verdict_sentences

    for env in results.verdicts:
        fitted = "fixed budget" if env.fitted_runs is None else f"{env.fitted_runs} of {env.runs} runs fitted"
        from .robust import MIN_COUPLED_PAIRS

        counted = "" if env.counted else f"; shown, not counted ({env.not_counted_because}): not a verdict"
        print(
            f"Verdict of {env.environment}: {env.status} ({fitted}); {env.configurations} configurations "
            f"x up to {env.seeds} seeds; {env.couplings} couplings (at least {MIN_COUPLED_PAIRS} pairs each to "
            f"count), {env.coupled_pairs} seed pairs, {env.noise_pairs} within noise"
            + (" (a loss gap: no noise filter)" if env.loss_gap else "")
            + counted
        )
        width = max(len(m.measure) for m in env.measures) + 2
        in_fit = f"  {'in fit':>6}" if env.loss_gap else ""
        print(
            f"{'measure':>{width}}  {'tau':>6}  {'95 % (configs)':>15}  {'in n':>6}  {'in par':>6}{in_fit}  "
            f"{'gran':>6}  {'seed':>6}  {'pooled':>6}  {'tied':>5}  {'cens':>4}  {'coupl':>5}  {'mean':>6}  "
            f"{'p90':>6}  {'max':>6}"
        )
        for m in env.measures:
            coupled = m.coupled_summary
            mark = " *" if is_baseline(m.measure) else "  "
            fit_cell = f"  {_cell(m.tau_within_fit, 6, True)}" if env.loss_gap else ""
            print(
                f"{m.measure + mark:>{width}}  {_cell(m.kendall_tau, 6, True)}  "
                f"{_interval(m.kendall_tau_ci.low, m.kendall_tau_ci.high):>15}  {_cell(m.tau_within_n, 6, True)}  "
                f"{_cell(m.tau_within_params, 6, True)}{fit_cell}  {_cell(m.granulated_tau, 6, True)}  "
                f"{_cell(m.seed_noise, 6, True)}  {_cell(m.pooled_sign_error, 6)}  {m.tied_pairs:>5}  "
                f"{m.censored:>4}  {coupled.couplings:>5}  {_cell(coupled.mean, 6)}  {_cell(coupled.p90, 6)}  "
                f"{_cell(coupled.max, 6)}"
            )
        print(
            "  * a trivial baseline. tau: tau-b over the fitted runs, 95 % interval resampling configurations "
            "(seeds together); in n / in par: tau-b within strata of n / of the parameter count"
            + ("; in fit: within terciles of the training loss minus the entropy rate" if env.loss_gap else "")
            + "; gran: granulated "
            "tau over the hyperparameter axes; seed: psi of the seed axis (noise); pooled: (1 - tau_a) / 2, a tie "
            "1/2; cens: censored runs (a search at its bound); coupl, mean, p90, max: the coupled sign-errors"
        )
        for sentence in verdict_sentences(env):
            print(f"  {sentence}")


def _print_robust(results: LabResults) -> None:
    """Dziugaite et al.'s robust view over the couplings of the environments that count (:mod:`.robust`)."""
    from .registry import is_baseline
    from .views import robust_sentence

    rows = results.robust
    if not rows:
        print(f"Robust view (Dziugaite et al. 2020): {robust_sentence(rows)}")
        return
    from .robust import MIN_COUPLED_PAIRS

    print(
        "Robust view (Dziugaite et al. 2020): sign-error on couplings (two configurations differing in one "
        f"hyperparameter, seed for seed; a tie 1/2; pairs within noise left out; at least {MIN_COUPLED_PAIRS} pairs "
        "per coupling) over the environments that count (fitted, at least 5 seeds); worst case first"
    )
    axes = list(dict.fromkeys(axis for r in rows for axis in r.axes))
    width = max(len(r.measure) for r in rows) + 2
    columns = "  ".join(f"{axis:>11}" for axis in axes)
    print(f"{'measure':>{width}}  {'coupl':>5}  {'worst':>6}  {'p90':>6}  {'mean':>6}  {columns}")
    for r in rows:
        by_axis = r.by_axis()
        mark = " *" if is_baseline(r.measure) else "  "
        cells = "  ".join(_cell(by_axis.get(axis, math.nan), 11) for axis in axes)
        print(
            f"{r.measure + mark:>{width}}  {r.couplings:>5}  {_cell(r.max, 6)}  {_cell(r.p90, 6)}  "
            f"{_cell(r.mean, 6)}  {cells}"
        )
    print(f"  {robust_sentence(rows)}")


def _print_table(correlations: Sequence[MeasureCorrelation], runs: int, gap: str) -> None:
    from .correlation import BOOTSTRAP_DRAWS, BOOTSTRAP_SEED

    if runs < 2:
        print(f"{runs} finished run(s): correlations need at least two runs")
        return
    print(
        f"Rank correlation with the gap ({gap}) over the final checkpoints of all {runs} runs, fitted or not "
        "(descriptive: the verdict below reads the fitted runs alone)"
    )
    print(
        "  kendall_tau: tau-b over all runs; granulated_tau: Jiang et al. (2020), mean over the hyperparameter "
        "axes of the mean tau-a within groups differing in that axis only (the seed axis apart, as noise)"
    )
    print(
        f"  95 % percentile bootstrap intervals ({BOOTSTRAP_DRAWS} draws, seed {BOOTSTRAP_SEED}), resampling "
        "configurations (the seeds of one drawn together), one joint draw for the granulated tau"
    )
    width = max(len(c.measure) for c in correlations)
    print(
        f"{'measure':>{width}}  {'kendall_tau':>11}  {'95 % interval':>16}  {'granulated_tau':>14}  "
        f"{'95 % interval':>16}  {'runs':>4}  {'groups':>6}"
    )
    for c in correlations:
        tau = "n/a" if math.isnan(c.kendall_tau) else f"{c.kendall_tau:+.3f}"
        granulated = "n/a" if math.isnan(c.granulated_tau) else f"{c.granulated_tau:+.3f}"
        print(
            f"{c.measure:>{width}}  {tau:>11}  {_interval(c.kendall_tau_ci.low, c.kendall_tau_ci.high):>16}  "
            f"{granulated:>14}  {_interval(c.granulated_tau_ci.low, c.granulated_tau_ci.high):>16}  "
            f"{c.runs:>4}  {c.groups:>6}"
        )


def _print_comparison(results: LabResults, measure: str, other: str) -> None:
    from .tables import comparison
    from .views import comparison_sentence

    difference = comparison(results.runs, measure, other)
    print(
        f"Paired bootstrap over the {difference.runs} runs where both are finite: tau({measure}) - tau({other}) = "
        f"{difference.kendall_tau:+.3f} {_interval(difference.kendall_tau_ci.low, difference.kendall_tau_ci.high)}, "
        f"granulated {difference.granulated_tau:+.3f} "
        f"{_interval(difference.granulated_tau_ci.low, difference.granulated_tau_ci.high)}"
    )
    print(comparison_sentence(difference))


def _cmd_train(args: argparse.Namespace) -> int:
    from .sweep import run_sweep

    spec = _train_spec(args)
    print(f"{spec.name}: {spec.task.describe()}", flush=True)
    result = run_sweep(
        [spec],
        Path(args.out),
        use_cache=not args.no_cache,
        progress=_progress,
        report=_report,
        compile=not args.no_compile,
    )
    _print_steps(result.results.run(spec.name))
    print(
        f"{result.results.run(spec.name).params} parameters; test error on {spec.settings.test_samples} fresh "
        f"samples; checkpoints, runs.csv and correlations.csv in {args.out} ({len(result.results.runs)} run(s) there)"
    )
    return 0


def _train_spec(args: argparse.Namespace) -> RunSpec:
    """The one run ``lab train`` asks for: its architecture, data, task and family, and its settings (a
    checkpoint every quarter of the steps unless ``--save-every`` says otherwise)."""
    from .tasks import ThresholdTask
    from .train import RunSpec

    settings = replace(
        _DEFAULTS,
        steps=args.steps,
        save_every=args.save_every or max(1, args.steps // 4),
        test_samples=args.test_samples,
        learning_rate=args.learning_rate,
        until_fit=args.until_fit,
        fit_every=args.fit_every or 0,
    )
    task = task_of(args.task)
    return RunSpec(
        layers=args.layers,
        hidden=args.hidden,
        heads=args.heads,
        n_train=args.n_train,
        seed=args.seed,
        task=replace(task.default, label_noise=args.label_noise)
        if task is not Task.THRESHOLD
        else ThresholdTask(label_noise=args.label_noise),
        settings=settings,
        family=family_of(args.family),
    )


def _print_steps(run: RunTrajectory) -> None:
    """One line per saved step of a run: its errors, the gap and the proxies."""
    print(
        f"{'step':>6} {'train_err':>9} {'test_err':>9} {'se':>7} {'gap':>8} {'log10 ours':>10} "
        f"{'log10 Edelman':>13} {'mean p*':>7}"
    )
    for s in run.steps:
        print(
            f"{s.step:>6} {s.train_error:>9.4f} {s.test_error:>9.4f} {s.test_error_se:>7.4f} {s.gap:>+8.4f} "
            f"{s.ours_log10:>10.4f} {s.edelman_log10:>13.4f} {sum(s.p_opt) / len(s.p_opt):>7.3f}"
        )


def _cmd_sweep(args: argparse.Namespace) -> int:
    from specbound.studies import Executor, Status

    from .reference import shipped_reference
    from .sweep import run_sweep

    environments = _environments(args)
    shipped = shipped_reference(args.preset, *environments[0]) if args.export_reference else None
    specs = [spec for task, family in environments for spec in _environment_specs(args, task, family)]
    started = time.perf_counter()
    result = run_sweep(
        specs,
        Path(args.out),
        use_cache=not args.no_cache,
        progress=_progress,
        report=_report,
        executor=Executor(workers=args.workers, dask=args.dask),
        compile=not args.no_compile,
    )
    done = sum(o.status is Status.DONE for o in result.outcomes)
    print(
        f"{len(specs)} runs ({done} trained now, {len(specs) - done} already done) in "
        f"{time.perf_counter() - started:.1f} s; wrote {', '.join(f.name for f in result.files)}"
    )
    _print_correlations(result.results)
    if shipped is not None:
        _export_reference(
            Path(args.out), shipped, seconds=time.perf_counter() - started if done == len(specs) else None
        )
    return 0


def _environments(args: argparse.Namespace) -> list[tuple[Task, Family]]:
    """Every task x family that ``lab sweep`` is given and that can be trained (a causal task on the
    decoders only), checked against ``--export-reference`` (one environment) and ``--until-fit`` (not
    with the grokking preset, which trains past the fit on purpose)."""
    from .grid import GROK
    from .train import DECODERS, LabError

    tasks, families = [task_of(t) for t in _names(args.task)], [family_of(f) for f in _names(args.family)]
    environments = [(t, f) for t in tasks for f in families if not t.causal or f.decoder]
    if not environments:
        raise LabError(f"the {', '.join(tasks)} task(s) need a decoder family ({', '.join(sorted(DECODERS))})")
    if args.export_reference and len(environments) > 1:
        raise LabError("--export-reference takes one environment (one --task and one --family)")
    if args.until_fit and args.preset == GROK:
        raise LabError(f"the {GROK} preset trains past the fit on purpose (to see the jump): --until-fit would stop it")
    return environments


def _environment_specs(args: argparse.Namespace, task: Task, family: Family) -> list[RunSpec]:
    """The runs of one environment: the preset's grid (or ``--grid``'s), its axes and settings replaced
    by those given on the command line; says how many and where."""
    from .grid import preset_grid, read_grid

    base = preset_grid(args.preset, task, family)
    grid = read_grid(args.grid, base) if args.grid else base
    overrides: dict[str, Any] = {
        axis: tuple(dict.fromkeys(getattr(args, axis)))
        for axis in (
            "layers",
            "hidden",
            "heads",
            "n_train",
            "label_noise",
            "learning_rates",
            "batch_sizes",
            "weight_decays",
            "seeds",
        )
        if getattr(args, axis)
    }
    chosen = ("steps", "save_every", "until_fit", "fit_every")
    settings = {name: getattr(args, name) for name in chosen if getattr(args, name)}
    overrides["settings"] = replace(grid.settings, **settings)
    grid = replace(grid, **overrides)
    specs = list(grid.specs())
    print(f"{len(specs)} runs of {family} on {grid.task.describe()}; results in {args.out}", flush=True)
    return specs


def _export_reference(out: Path, shipped: ShippedReference, *, seconds: float | None) -> None:
    """``--export-reference``: the sweep's results in ``out`` (no weights) written as the reference shipped
    inside the package for its preset and environment; ``seconds``, the sweep's time when every run was
    trained now."""
    from .reference import export_reference

    written = export_reference(
        out,
        shipped.directory,
        sweep_seconds=seconds,
        regenerate=shipped.regenerate,
        max_steps=shipped.max_steps,
        environment=shipped.environment,
        stands_for=shipped.stands_for or None,
    )
    print(f"exported the reference ({len(written)} files) to {written[0].parent}")


def _names(values: list[str] | str) -> list[str]:
    """The distinct names given to --task or --family, in order."""
    return list(dict.fromkeys([values] if isinstance(values, str) else values))


def _cmd_show(args: argparse.Namespace) -> int:
    from .reference import REFERENCE_DIR
    from .tables import read_results

    if args.dir is None:
        print(f"the shipped reference: {LAB_MODELS}")
    results = read_results(Path(args.dir) if args.dir is not None else REFERENCE_DIR)
    _print_correlations(results)
    if args.compare:
        _print_comparison(results, *args.compare)
    if args.runs and results.runs:  # no finished run (or none readable): there is no table to print
        from .tables import runs_frame

        frame = runs_frame(results.runs)
        frame = frame[frame["final"]][
            ["run", "train_error", "test_error", "test_error_se", "gap", "ours_log10", "edelman_log10", "p_opt_mean"]
        ]
        print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    """The verdict of the given lab directories (default: every shipped reference) as Markdown."""
    from .reference import SWEEP_REFERENCES, load_reference
    from .tables import lab_results, read_results
    from .verdict import robust_view
    from .views import REPORT_TITLE, forgetting_report, verdict_report

    if args.dirs:
        results = lab_results(tuple(r for d in args.dirs for r in read_results(Path(d)).runs))
        print(verdict_report(results.verdicts, results.robust), end="")
        print(forgetting_report(results.forgetting), end="")
        return 0
    # each shipped sweep read as its own (two sweeps of one environment are two designs), the robust view
    # over the fitted environments of them all
    loaded = [(s, load_reference(s.directory)) for s in SWEEP_REFERENCES]
    judged = [(f"{s.models} on the {s.task} task, `--preset {s.preset}`", results.verdicts) for s, results in loaded]
    every = [v for _, verdicts in judged for v in verdicts]
    report = verdict_report(every, robust_view(every), None, sources=[name for name, vs in judged for _ in vs])
    print(REPORT_TITLE + "\n" + shipped_study_section() + report, end="")
    print(forgetting_report([row for _, results in loaded for row in results.forgetting]), end="")
    return 0


def shipped_study_section() -> str:
    """The shipped study's answer as Markdown, first in the report (empty while no corpus is shipped)."""
    from .study import answer_markdown, shipped_study_answer

    data = shipped_study_answer()
    return "" if data is None else answer_markdown(data) + "\n"


def _cmd_remeasure(args: argparse.Namespace) -> int:
    from .reference import REFERENCE_DIR, remeasure
    from .tables import read_results

    directory = Path(args.dir) if args.dir is not None else REFERENCE_DIR
    written = remeasure(directory, tuple(args.measure))  # a LabError is main's one stderr line
    print(f"recomputed {', '.join(args.measure)} from the stored spectra; rewrote {len(written)} files in {directory}")
    _print_correlations(read_results(directory))
    return 0


def add_lab_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``lab train | sweep | show | report | remeasure | study`` under the main parser's subcommands."""
    lab = commands.add_parser(
        "lab",
        help="train small Transformers (BERT encoders; GPT-2, Llama, GPT-NeoX decoders) on synthetic tasks and set "
        "bounds beside their measured gaps",
    )
    actions = lab.add_subparsers(dest="lab_command", required=True)
    _add_train_command(actions)
    _add_sweep_command(actions)
    _add_reading_commands(actions)
    from .study_cli import add_study_command

    add_study_command(actions, _workers, _bounded(float, 1.0, 60.0 * 24 * 30))


def _add_train_command(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``lab train``: one run's architecture, data, task and family, its optimisation and where it goes."""
    train = actions.add_parser("train", help="train one run, saving checkpoints and every bound term per step")
    limits = LAB_LIMITS
    train.add_argument("--layers", type=_layers, required=True, help=f"encoder layers L (1..{limits.max_layers})")
    train.add_argument("--hidden", type=_hidden, required=True, help=f"width N (2..{limits.max_hidden})")
    train.add_argument(
        "--heads", type=_heads, required=True, help=f"attention heads H dividing N (1..{limits.max_heads})"
    )
    train.add_argument("--n-train", type=_n_train, required=True, help=f"training examples n (1..{limits.max_train})")
    train.add_argument(
        "--label-noise",
        type=_noise,
        default=0.0,
        help=f"probability q of flipping each label, train and test (0 <= q < {LAB_LIMITS.max_label_noise:g})",
    )
    train.add_argument(
        "--steps",
        type=_steps,
        default=_DEFAULTS.steps,
        help=f"optimiser steps (default {_DEFAULTS.steps}, at most {LAB_LIMITS.max_steps})",
    )
    train.add_argument(
        "--save-every",
        type=_steps,
        default=None,
        help="checkpoint every k steps (default steps / 4); step 0 and the last step always",
    )
    train.add_argument("--seed", type=_seed, default=0, help="seed of the data, the initialisation and the batches")
    train.add_argument(
        "--learning-rate",
        type=_learning_rate,
        default=_DEFAULTS.learning_rate,
        help=f"AdamW's learning rate, in [{LAB_LIMITS.min_learning_rate:g}, {LAB_LIMITS.max_learning_rate:g}]",
    )
    train.add_argument("--until-fit", action="store_true", help=_UNTIL_FIT_HELP)
    train.add_argument("--fit-every", type=_steps, default=None, help=_FIT_EVERY_HELP)
    train.add_argument(
        "--test-samples",
        type=_test_samples,
        default=_DEFAULTS.test_samples,
        help=f"fresh samples for the test error (default {_DEFAULTS.test_samples}, "
        f"at most {LAB_LIMITS.max_test_samples})",
    )
    train.add_argument("--task", choices=list(Task), default=Task.THRESHOLD, help=_TASK_HELP)
    train.add_argument("--family", choices=list(FAMILIES), default=Family.BERT, help=_FAMILY_HELP)
    train.add_argument("--out", required=True, help="lab directory (the run joins any runs already there)")
    train.add_argument("--no-cache", action="store_true", help="analyse checkpoints without the profile cache")
    train.add_argument("--no-compile", action="store_true", help=_NO_COMPILE_HELP)
    train.set_defaults(handler=_cmd_train)


def _add_sweep_command(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``lab sweep``: a preset or a JSON grid, its axes replaced, the environments, and where and how it runs."""
    from .grid import PRESET_NAMES

    sweep = actions.add_parser("sweep", help="train and analyse a grid of runs (resumable)")
    sweep.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        default="smoke",
        help="smoke: 4 runs in about a minute; class: 48 runs within 15 minutes on 2 cores; fit: 120 runs trained "
        "until they fit their training set, 5 seeds, 2 learning rates; study: 480 runs held to the same "
        "rules (depth 1-4, width 32-128, n 100-2700), hours: see the manual (docs/lab); finetune: 80 runs "
        "fine-tuning the shipped base in full and through LoRA adapters of rank 1, 4, 16; grok: ten seeds of a "
        "one-layer model on modular addition with weight decay 1 (--task modular), which grok (see the manual); "
        "scaling: 12 runs, one per depth 1-4 and width 32-128, the Scaling page's stand-in for the BERT Miniatures",
    )
    sweep.add_argument(
        "--grid",
        metavar="FILE.json",
        default=None,
        help="a JSON grid (axis lists layers, hidden, heads, n_train, label_noise, learning_rates, batch_sizes, "
        "weight_decays, seeds; "
        "optional settings and task objects) overriding the preset",
    )
    _sweep_axis_options(sweep)
    sweep.add_argument("--until-fit", action="store_true", help=_UNTIL_FIT_HELP)
    sweep.add_argument("--fit-every", type=_steps, default=None, help=_FIT_EVERY_HELP)
    sweep.add_argument("--steps", type=_steps, default=None, help="optimiser steps per run")
    sweep.add_argument("--save-every", type=_steps, default=None, help="checkpoint every k steps")
    sweep.add_argument(
        "--task",
        choices=list(Task),
        nargs="+",
        default=[Task.THRESHOLD],
        help=_TASK_HELP + "; the preset's axes follow the task. Several tasks and families sweep every "
        "environment task x family (markov with the decoders only), e.g. a study for a cluster: --preset study "
        "--task threshold parity modular markov --family bert gpt2 llama neox --dask ADDRESS",
    )
    sweep.add_argument("--family", choices=list(FAMILIES), nargs="+", default=[Family.BERT], help=_FAMILY_HELP)
    sweep.add_argument("--out", required=True, help="lab directory (a re-run skips the runs finished there)")
    _sweep_running_options(sweep)
    sweep.set_defaults(handler=_cmd_sweep)


def _sweep_axis_options(sweep: argparse.ArgumentParser) -> None:
    """The axes of a sweep's grid the command line replaces: depth, width, heads, n, noise, seeds, and the
    optimisation's (learning rate, batch size, weight decay)."""
    sweep.add_argument("--layers", type=_layers, nargs="+", help="replace the depth axis")
    sweep.add_argument("--hidden", type=_hidden, nargs="+", help="replace the width axis")
    sweep.add_argument("--heads", type=_heads, nargs="+", help="replace the heads axis")
    sweep.add_argument("--n-train", dest="n_train", type=_n_train, nargs="+", help="replace the n axis")
    sweep.add_argument("--label-noise", dest="label_noise", type=_noise, nargs="+", help="replace the noise axis")
    sweep.add_argument("--seeds", type=_seed, nargs="+", help="replace the seed axis")
    sweep.add_argument(
        "--learning-rates",
        dest="learning_rates",
        type=_learning_rate,
        nargs="+",
        help="the optimisation axis: one run per learning rate (default: the preset's one)",
    )
    sweep.add_argument(
        "--batch-sizes",
        dest="batch_sizes",
        type=_batch_size,
        nargs="+",
        help="an optimisation axis: one run per batch size (default: the preset's one)",
    )
    sweep.add_argument(
        "--weight-decays",
        dest="weight_decays",
        type=_weight_decay,
        nargs="+",
        help="an optimisation axis: one run per AdamW weight decay in [0, 1] (default: the preset's one)",
    )


def _sweep_running_options(sweep: argparse.ArgumentParser) -> None:
    """What a sweep writes beside its results (the shipped reference) and how it runs: the profile cache,
    compiled evaluation, local workers or a Dask scheduler."""
    sweep.add_argument(
        "--export-reference",
        action="store_true",
        help="also write the results (no weights) as the reference shipped inside the package",
    )
    sweep.add_argument("--no-cache", action="store_true", help="analyse checkpoints without the profile cache")
    sweep.add_argument("--no-compile", action="store_true", help=_NO_COMPILE_HELP)
    sweep.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="train N runs at once in local worker processes (default 1); the results are the same",
    )
    sweep.add_argument(
        "--dask",
        default=None,
        metavar="ADDRESS",
        help="train on a running dask.distributed scheduler (its workers must share the lab directory's file system)",
    )


def _add_reading_commands(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``lab show``, ``lab report`` and ``lab remeasure``: what lab directories hold, read back."""
    show = actions.add_parser(
        "show", help="print a lab directory's correlation table, its verdicts and the robust view"
    )
    show.add_argument("dir", nargs="?", default=None, help="lab directory (default: the shipped reference)")
    show.add_argument("--runs", action="store_true", help="also list every run's final errors and proxies")
    show.add_argument(
        "--compare",
        nargs=2,
        metavar=("MEASURE", "OTHER"),
        default=None,
        help="paired bootstrap of tau(MEASURE) - tau(OTHER), e.g. --compare ours spectral_product",
    )
    show.set_defaults(handler=_cmd_show, prints_result="lab show")

    report = actions.add_parser(
        "report",
        help="the verdict of lab directories as Markdown, every sentence computed from the tables",
    )
    report.add_argument("dirs", nargs="*", help="lab directories (default: every reference shipped in the package)")
    report.set_defaults(handler=_cmd_report)

    remeasure = actions.add_parser(
        "remeasure",
        help="recompute spectrum measures at every saved step from the stored spectra, without retraining",
    )
    remeasure.add_argument("dir", nargs="?", default=None, help="lab directory (default: the shipped reference)")
    remeasure.add_argument(
        "--measure",
        nargs="+",
        default=["alpha", "alpha_hat", "alpha_skipped"],
        help="CHECKPOINT measures to recompute (default: alpha alpha_hat alpha_skipped)",
    )
    remeasure.set_defaults(handler=_cmd_remeasure)
