"""The dashboard's words for a lab model come from the lab's Family and Task, not from a table of its own."""

from __future__ import annotations

from dashboard.wording.vocabulary import model_label, spec_words
from specbound_lab.tasks import MarkovTask, ModularTask, ParityTask
from specbound_lab.train import Family, RunSpec


def test_a_lab_model_is_named_from_its_family_and_task() -> None:
    encoders = RunSpec(layers=1, hidden=32, heads=2, n_train=1)
    assert model_label(encoders, plural=True) == "small encoders trained by the lab on the sparse threshold task"
    llama = RunSpec(layers=1, hidden=32, heads=2, n_train=1, task=MarkovTask(), family=Family.LLAMA)
    assert model_label(llama) == "small Llama decoder trained by the lab on the Markov next-token task"
    neox = RunSpec(layers=1, hidden=32, heads=2, n_train=1, task=ModularTask(), family=Family.NEOX)
    assert model_label(neox) == "small GPT-NeoX decoder trained by the lab on the modular addition task"


def test_label_noise_is_named_for_the_tasks_that_take_it() -> None:
    noisy = RunSpec(layers=1, hidden=32, heads=2, n_train=1, task=ParityTask(label_noise=0.1))
    assert spec_words(noisy).startswith("L = 1, N = 32, H = 2, n = 1, noise 0.1, lr ")
    modular = RunSpec(layers=1, hidden=32, heads=2, n_train=1, task=ModularTask(), family=Family.GPT2)
    assert "noise" not in spec_words(modular)


def test_a_lab_run_has_a_short_name_in_the_labs_words() -> None:
    """What labels, subtitles and file names show in place of a run id: the model in the lab's words, size,
    training set and seed, the task where it is not the first environment's, and the step shown."""
    from dashboard.wording.vocabulary import run_name

    gpt2 = RunSpec(layers=1, hidden=64, heads=4, n_train=2823, seed=3, task=ModularTask(), family=Family.GPT2)
    assert run_name(gpt2, 3000) == "lab GPT-2 decoder L1 N64 H4 n2823 seed 3, modular addition task, step 3000"
    encoder = RunSpec(layers=2, hidden=32, heads=2, n_train=400)  # the lab's first environment: no task words
    assert run_name(encoder) == "lab encoder L2 N32 H2 n400 seed 0"
    assert gpt2.name.startswith("lab-gpt2-modular-L1-N64-H4-n2823") and gpt2.name not in run_name(gpt2)
