"""FASTopic is the authors' package's model: the same defaults, initial parameters, loss,
gradients, transport plans, topic-word matrix (``get_beta``), document proportions
(``get_theta``) and training run as ``fastopic`` 1.0.1.

The package is the oracle: its own ``fastopic._fastopic.fastopic`` module (``init``,
``forward``, ``get_beta``, ``get_theta``), its ``ETP`` (log-domain Sinkhorn) and its
``FASTopic.fit_transform`` training loop run beside ours. It is installed by
``scripts/setup.sh``; this file fails, rather than skips, without it.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from fastopic import FASTopic as PackageFASTopic
from fastopic._ETP import ETP
from fastopic._fastopic import fastopic as PackageModule

from topicbench.baselines import _fastopic_network as network_module
from topicbench.baselines import fastopic as ours
from topicbench.baselines.fastopic import FASTopic
from topicbench.core.preprocess import corpus_from_token_lists

N_DOCUMENTS, VOCABULARY_SIZE, NUM_TOPICS, EMBEDDING_SIZE = 12, 40, 4, 8


def unit_rows(rng, n, size):
    vectors = rng.standard_normal((n, size)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def random_counts(rng, n_documents=N_DOCUMENTS, vocabulary_size=VOCABULARY_SIZE):
    """Poisson counts with every document non-empty (a few words appear nowhere)."""
    counts = rng.poisson(0.6, (n_documents, vocabulary_size)).astype(np.float32)
    counts[np.arange(n_documents), rng.integers(0, vocabulary_size, n_documents)] += 1
    counts[:, :2] = 0
    return sp.csr_matrix(counts)


def settings(**changes):
    return {**FASTopic.defaults, **changes}


def both_models(seed: int, *, dt_alpha=3.0, tw_alpha=2.0, theta_temperature=1.0, embedding_size=EMBEDDING_SIZE):
    """The package's module after ``init`` and ours, each built after ``torch.manual_seed(seed)``."""
    torch.manual_seed(seed)
    package = PackageModule(NUM_TOPICS, theta_temperature, dt_alpha, tw_alpha)
    package.init(VOCABULARY_SIZE, embedding_size)
    torch.manual_seed(seed)
    network = ours.build_network(
        NUM_TOPICS, VOCABULARY_SIZE, embedding_size,
        settings(dt_alpha=dt_alpha, tw_alpha=tw_alpha, theta_temperature=theta_temperature),
    )
    return package, network


def parameters(module) -> dict:
    return dict(module.named_parameters())


def close(actual, expected, rtol=1e-5):
    """Elementwise within rtol, with an absolute floor of rtol x the largest |expected|."""
    expected = expected.detach()
    torch.testing.assert_close(actual.detach(), expected, rtol=rtol, atol=rtol * float(expected.abs().max()))


# ------------------------------------------------------------------------------------------------
# Defaults and constants
# ------------------------------------------------------------------------------------------------


def test_defaults_are_the_packages():
    model = inspect.signature(PackageFASTopic.__init__).parameters
    fit = inspect.signature(PackageFASTopic.fit_transform).parameters
    etp = inspect.signature(ETP.__init__).parameters
    defaults = FASTopic.defaults
    assert defaults["epochs"] == fit["epochs"].default == 200
    assert defaults["learning_rate"] == fit["learning_rate"].default == 0.002
    assert defaults["dt_alpha"] == model["DT_alpha"].default == 3.0
    assert defaults["tw_alpha"] == model["TW_alpha"].default == 2.0
    assert defaults["theta_temperature"] == model["theta_temp"].default == 1.0
    assert defaults["sinkhorn_max_iterations"] == etp["OT_max_iter"].default == 5000
    assert defaults["sinkhorn_tolerance"] == etp["stop_thr"].default == 0.005
    # the package builds both ETPs with these defaults (only alpha and the b weights given)
    package = PackageModule(NUM_TOPICS)
    package.init(VOCABULARY_SIZE, EMBEDDING_SIZE)
    for plan in (package.DT_ETP, package.TW_ETP):
        assert (plan.OT_max_iter, plan.stop_thr) == (5000, 0.005)
        assert plan.init_a_dist is None  # uniform row marginals
    assert package.DT_ETP.b_dist is package.topic_weights and package.TW_ETP.b_dist is package.word_weights
    assert package.epsilon == network_module.DSR_EPSILON
    # the log floor and the absorb-and-check schedule we mirror
    source = inspect.getsource(ETP.forward)
    assert "torch.log(a + 1e-30)" in source and "torch.log(b + 1e-30)" in source
    assert network_module.SINKHORN_LOG_FLOOR == 1e-30
    assert f"cpt % {network_module.SINKHORN_CHECK_INTERVAL} == 1" in source


def test_a_seed_draws_the_packages_initial_parameters():
    package, network = both_models(7)
    theirs, mine = parameters(package), parameters(network)
    assert set(mine) == set(theirs) == {"topic_embeddings", "topic_weights", "word_embeddings", "word_weights"}
    for name, value in theirs.items():
        assert torch.equal(mine[name], value), name
    # after the draws both leave the global RNG in the same state
    torch.manual_seed(7)
    PackageModule(NUM_TOPICS).init(VOCABULARY_SIZE, EMBEDDING_SIZE)
    expected = torch.rand(3)
    torch.manual_seed(7)
    ours.build_network(NUM_TOPICS, VOCABULARY_SIZE, EMBEDDING_SIZE, settings())
    assert torch.equal(torch.rand(3), expected)


# ------------------------------------------------------------------------------------------------
# Loss and gradients at equal parameters
# ------------------------------------------------------------------------------------------------

#: (dt_alpha, tw_alpha, embedding scale, parameter noise): the package's defaults at their
#: initial parameters, then parameters moved away from the start, then sharper plans and longer
#: embeddings, where Sinkhorn needs several absorb-and-check windows
CASES = [(3.0, 2.0, 1.0, 0.0), (3.0, 2.0, 1.0, 0.3), (10.0, 8.0, 2.0, 0.3), (30.0, 30.0, 2.0, 0.5)]


@pytest.mark.parametrize("dt_alpha, tw_alpha, scale, noise", CASES)
def test_loss_and_gradients_equal_the_packages(dt_alpha, tw_alpha, scale, noise):
    rng = np.random.default_rng(int(dt_alpha * 10 + noise * 10))
    counts = random_counts(rng)
    documents = torch.from_numpy(unit_rows(rng, N_DOCUMENTS, EMBEDDING_SIZE) * scale)
    package, network = both_models(3, dt_alpha=dt_alpha, tw_alpha=tw_alpha)
    if noise:
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for name, value in parameters(package).items():
                value.add_(noise * torch.randn(value.shape, generator=generator))
                parameters(network)[name].copy_(value)
    package_loss = package(torch.from_numpy(counts.toarray()), documents)["loss"]
    package_loss.backward()
    our_loss = network.loss(documents, network_module.WordCounts(counts))
    our_loss.backward()
    close(our_loss, package_loss)
    theirs = parameters(package)
    for name, value in parameters(network).items():
        assert torch.isfinite(value.grad).all()
        close(value.grad, theirs[name].grad)
    if dt_alpha > 10:  # the sharp case runs more than two Sinkhorn windows
        assert min(stats["steps"] for stats in network.sinkhorn.values()) > 2 * network_module.SINKHORN_CHECK_INTERVAL


def test_beta_and_theta_equal_the_packages_get_beta_and_get_theta():
    rng = np.random.default_rng(4)
    package, network = both_models(11, theta_temperature=0.5)
    with torch.no_grad():
        for name, value in parameters(package).items():
            value.add_(0.2 * torch.randn(value.shape))
            parameters(network)[name].copy_(value)
    close(network.get_beta(), package.get_beta())
    train = torch.from_numpy(unit_rows(rng, N_DOCUMENTS, EMBEDDING_SIZE))
    held_out = torch.from_numpy(unit_rows(rng, 5, EMBEDDING_SIZE))
    for documents in (train, held_out):
        close(network.get_theta(documents, train), package.get_theta(documents, train))


def test_sparse_reconstruction_equals_the_dense_product_and_its_gradients():
    rng = np.random.default_rng(2)
    counts = random_counts(rng)
    entries = network_module.WordCounts(counts)
    theta = torch.rand(N_DOCUMENTS, NUM_TOPICS, dtype=torch.float64, requires_grad=True)
    beta = torch.rand(NUM_TOPICS, VOCABULARY_SIZE, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(entries.counts.shape[0], dtype=torch.float64)
    (entries.products(theta, beta) * weights).sum().backward()
    dense = theta @ beta
    rows, columns = counts.nonzero()
    expected_grads = torch.autograd.grad((dense[rows, columns] * weights).sum(), (theta, beta))
    torch.testing.assert_close(entries.products(theta, beta), dense[rows, columns])
    torch.testing.assert_close(theta.grad, expected_grads[0])
    torch.testing.assert_close(beta.grad, expected_grads[1])


# ------------------------------------------------------------------------------------------------
# The transport plan against the package's ETP
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alpha, max_iterations, tolerance",
    [
        (3.0, 5000, 0.005),  # the defaults
        (3.0, 5000, 1e-5),  # several absorb-and-check windows (351 steps)
        (20.0, 75, 1e-9),  # stops at the step limit in the middle of a window (scalings not absorbed)
        (20.0, 101, 1e-9),  # stops at the step limit on an absorbing step
        (3.0, 1, 0.005),  # one step
        (3.0, 5000, 2.0),  # no step at all: the plan is the kernel exp(-alpha M)
    ],
)
def test_transport_plan_and_its_gradients_equal_the_packages_etp(alpha, max_iterations, tolerance):
    generator = torch.Generator().manual_seed(int(alpha) + max_iterations)
    x = torch.randn(15, 6, generator=generator, dtype=torch.float64)
    y = torch.randn(25, 6, generator=generator, dtype=torch.float64)
    weights = torch.randn(25, 1, generator=generator, dtype=torch.float64)
    upstream = torch.randn(15, 25, generator=generator, dtype=torch.float64)
    results = []
    for implementation in ("package", "ours"):
        xs, ys, ws = (t.clone().requires_grad_() for t in (x, y, weights))
        if implementation == "package":
            cost, plan = ETP(alpha, init_b_dist=ws, OT_max_iter=max_iterations, stop_thr=tolerance)(xs, ys)
        else:
            distances = network_module.squared_distances(xs, ys)
            a = (torch.ones(15) / 15).unsqueeze(1)  # float32, as the package's
            stats = {}
            plan = network_module.transport_plan(
                distances, a, torch.softmax(ws, dim=0), alpha, max_iterations, tolerance, stats
            )
            cost = (plan * distances).sum()
        (cost + (plan * upstream).sum()).backward()
        results.append((cost, plan, xs.grad, ys.grad, torch.zeros_like(ws) if ws.grad is None else ws.grad))
    if tolerance >= 1:
        assert stats["steps"] == 0
    elif tolerance < 1e-3:
        assert stats["steps"] == max_iterations or stats["steps"] > 6 * network_module.SINKHORN_CHECK_INTERVAL
    for theirs, mine in zip(*results):
        torch.testing.assert_close(mine.detach(), theirs.detach(), rtol=1e-7, atol=1e-9 * float(theirs.detach().abs().max()))


def test_transport_plan_falls_back_to_the_log_domain_where_exp_underflows():
    """Costs so large that the absorbed kernels' products underflow in float32: those windows
    run in the log domain, the others as matrix-vector products. The plan and gradients are the
    package's in float64 and, in float32, as close to them as the package's own float32 run
    (whose gradients miss by up to 7e-4 here, ours by 1.2e-4)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(20, 5, generator=generator) * 2
    y = torch.randn(30, 5, generator=generator) * 2
    weights = torch.randn(30, 1, generator=generator) * 3
    upstream = torch.randn(20, 30, generator=generator)
    results = {}
    for implementation, dtype in [("package", torch.float64), ("ours", torch.float64), ("ours", torch.float32)]:
        xs, ys, ws = (t.to(dtype).requires_grad_() for t in (x, y, weights))
        if implementation == "package":
            cost, plan = ETP(50.0, init_b_dist=ws, OT_max_iter=301)(xs, ys)
        else:
            distances = network_module.squared_distances(xs, ys)
            stats = {}
            plan = network_module.transport_plan(
                distances, (torch.ones(20) / 20).unsqueeze(1), torch.softmax(ws, dim=0), 50.0, 301, 0.005, stats
            )
            cost = (plan * distances).sum()
        (cost + (plan * upstream.to(dtype)).sum()).backward()
        results[implementation, dtype] = [t.detach().double() for t in (cost, plan, xs.grad, ys.grad, ws.grad)]
    assert stats["steps"] == 301 and 1 < stats["log_windows"] < 301 // network_module.SINKHORN_CHECK_INTERVAL + 1
    exact = results["package", torch.float64]
    for rtol, dtype in [(1e-9, torch.float64), (5e-4, torch.float32)]:
        for mine, theirs in zip(results["ours", dtype], exact):
            assert torch.isfinite(mine).all()
            close(mine, theirs, rtol=rtol)


# ------------------------------------------------------------------------------------------------
# A whole training run
# ------------------------------------------------------------------------------------------------


class GivenVocabulary:
    """The package's ``preprocess`` hook: our corpus's bag of words and vocabulary."""

    def __init__(self, corpus):
        self.corpus = corpus

    def preprocess(self, docs):
        return {"train_bow": self.corpus.doc_term, "vocab": list(self.corpus.vocabulary)}


def test_a_fit_equals_the_packages_training_run(monkeypatch):
    """One seed, one corpus, 20 epochs: our ``FASTopic.fit`` and the package's ``fit_transform``
    draw the same initial parameters and follow the same path (up to float rounding: the
    package permutes its full batch each epoch, and steps with the per-tensor Adam where ours
    uses the fused one), to the same per-epoch losses, parameters, β and θ."""
    rng = np.random.default_rng(5)
    vocabulary = [f"w{i:02d}" for i in range(VOCABULARY_SIZE)]
    counts = random_counts(rng, 30).toarray().astype(int)
    documents = [[vocabulary[w] for w in np.repeat(np.arange(VOCABULARY_SIZE), row)] for row in counts]
    corpus = corpus_from_token_lists(documents, vocabulary=vocabulary, name="fidelity")
    embeddings = unit_rows(rng, corpus.n_documents, 16)
    monkeypatch.setattr("topicbench.baselines.embeddings.document_embeddings", lambda corpus, **_: embeddings)
    epochs, seed = 20, 13

    package = PackageFASTopic(
        NUM_TOPICS, preprocess=GivenVocabulary(corpus), doc_embed_model=object(), device="cpu"
    )
    losses = []
    forward = package.model.forward
    monkeypatch.setattr(package.model, "forward", lambda *a: losses.append(float((r := forward(*a))["loss"].detach())) or r)
    torch.manual_seed(seed)
    np.random.seed(seed)  # the package shuffles its one full batch with numpy's global RNG
    _, package_theta = package.fit_transform(
        [""] * corpus.n_documents, epochs=epochs, preset_doc_embeddings=embeddings
    )

    model = FASTopic(NUM_TOPICS, random_state=seed, epochs=epochs)
    output = model.fit(corpus).output_
    trace = output.extra["training_loss"]
    assert isinstance(trace, list) and len(trace) == epochs and all(isinstance(v, float) for v in trace)
    np.testing.assert_allclose(trace, losses, rtol=1e-5)
    # by the end both plans need more than one Sinkhorn window
    assert all(stats["steps"] > network_module.SINKHORN_CHECK_INTERVAL for stats in model.network_.sinkhorn.values())
    with torch.no_grad():
        beta = model.network_.get_beta().numpy()
    np.testing.assert_allclose(beta, package.beta, rtol=1e-4, atol=1e-5 * package.beta.max())
    expected_topic_word = package.beta / package.beta.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(output.topic_word_matrix, expected_topic_word, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(output.topic_document_matrix.T, package_theta, rtol=1e-4, atol=1e-7)
    for name, value in parameters(package.model).items():
        np.testing.assert_allclose(
            parameters(model.network_)[name].detach().numpy(), value.detach().numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )
