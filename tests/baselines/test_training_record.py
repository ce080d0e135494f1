"""What every iterative fit records: its loss curve, whether it converged, and its one-time setup
apart from its fit time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topicbench.baselines import _neural, elda as elda_model
from topicbench.baselines.base import training_record
from topicbench.baselines.convergence import convergence
from topicbench.baselines.registry import MODELS
from synthetic_lda import lee_corpus, small_synthetic, synthetic_words  # noqa: F401 (fixtures used by name)


def test_training_record_pairs_losses_with_steps():
    assert training_record([3, 2, 1], kind="loss") == {
        "training_loss": [3.0, 2.0, 1.0], "training_steps": [1, 2, 3], "training_loss_kind": "loss"}
    with pytest.raises(ValueError, match="2 steps for 3"):
        training_record([3, 2, 1], kind="loss", steps=[0, 10])


@pytest.mark.parametrize("name, settings, steps", [
    ("gibbs_lda", {"iterations": 30}, [0, 10, 20, 30]),
    ("gensim_lda", {"passes": 3, "iterations": 10}, [1, 2, 3]),
    ("prodlda", {"epochs": 3}, [1, 2, 3]),
    ("etm", {"epochs": 3}, [1, 2, 3]),
    ("ctm", {"epochs": 3}, [1, 2, 3]),
    ("fastopic", {"epochs": 3}, [1, 2, 3]),
    ("hdp", {"iterations": 30}, [0, 10, 20, 30]),
])
def test_iterative_models_record_their_loss_curve_and_verdict(name, settings, steps, small_synthetic):
    reported = []
    output = MODELS.get(name)(4, random_state=0, **settings).fit(
        small_synthetic.corpus, on_progress=lambda *progress: reported.append(progress)).output_
    # the progress callback saw each recorded step, with the recorded loss, of the final total
    assert [step for step, _, _ in reported] == steps and {total for _, total, _ in reported} == {steps[-1]}
    np.testing.assert_allclose([loss for _, _, loss in reported], output.extra["training_loss"], rtol=1e-12)
    assert output.extra["training_steps"] == steps
    assert len(output.extra["training_loss"]) == len(steps) and np.all(np.isfinite(output.extra["training_loss"]))
    assert output.extra["training_loss_kind"]
    model = MODELS.get(name)
    judged = convergence(output.extra["training_loss"], steps, model.convergence_family)
    assert output.extra["convergence"] == judged["convergence"] and output.extra["converged"] == judged["converged"]
    assert output.extra["setup_seconds"] >= 0.0


@pytest.mark.parametrize("name", ["prodlda", "fastopic"])
def test_neural_models_record_the_device_they_trained_on(name, small_synthetic):
    output = MODELS.get(name)(3, random_state=0, epochs=1).fit(small_synthetic.corpus).output_
    assert output.settings["device_"] == ("cuda" if torch.cuda.is_available() else "cpu")


def test_minibatches_drop_the_short_last_batch_like_a_dataloader():
    generator = torch.Generator().manual_seed(0)
    sizes = [len(b) for b in _neural.minibatches(10, 4, generator, drop_last=True)]
    assert sizes == [4, 4]
    # without drop_last the short batch stays (merged into the previous one when it is a single row)
    assert [len(b) for b in _neural.minibatches(10, 4, torch.Generator().manual_seed(0))] == [4, 4, 2]
    assert [len(b) for b in _neural.minibatches(9, 4, torch.Generator().manual_seed(0))] == [4, 5]
    # fewer documents than one batch: that one batch is kept rather than training on nothing
    assert [len(b) for b in _neural.minibatches(3, 4, torch.Generator().manual_seed(0), drop_last=True)] == [3]


def test_elda_compiles_its_kernels_once_per_process_outside_the_timed_fit(small_synthetic, monkeypatch):
    from topicbench.core.elda.model import ELDA  # the estimator the model imports when it fits

    calls = []
    original = ELDA.fit

    def counting_fit(self, corpus, *args, **kwargs):
        calls.append(corpus.name)
        return original(self, corpus, *args, **kwargs)

    monkeypatch.setattr(ELDA, "fit", counting_fit)
    monkeypatch.setattr(elda_model, "_WARM", set())
    for _ in range(2):
        output = MODELS.get("elda")(None, random_state=0, generator="raw_umass").fit(small_synthetic.corpus).output_
    # the warm-up corpus was fitted once (the first setup), the real corpus twice
    assert calls.count("warm-up") == 1 and len(calls) == 3
    assert elda_model._WARM == {("raw_umass", "exact")}
    assert output.extra["setup_seconds"] >= 0.0 and output.fit_seconds > 0.0


def test_elda_reports_its_links_as_progress(small_synthetic):
    reported = []
    model = MODELS.get("elda")(random_state=0, kappa=1.5).fit(
        small_synthetic.corpus, on_progress=lambda *progress: reported.append(progress))
    budget = model.resolved_["budget_"]
    assert reported and reported[-1][:2] == (budget, budget)
    assert [step for step, _, _ in reported] == sorted(step for step, _, _ in reported)
    assert reported[-1][2] == pytest.approx(-model.output_.extra["log_posterior"])  # the loss: -F
