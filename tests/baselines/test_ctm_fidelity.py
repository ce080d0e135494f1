"""CTM is the authors' package's network: the same layers, initial weights, loss, gradients,
optimizer settings, defaults and topic-word distribution as ``contextualized-topic-models``
2.6.1, for CombinedTM and ZeroShotTM.

The package is the oracle: its own ``DecoderNetwork``, ``CTM._train_epoch`` (forward, ``_loss``,
backward) and ``get_topic_word_distribution`` run beside ours, with our parameters copied into
it (:func:`in_package_layout` names the mapping). It is installed by ``scripts/setup.sh``; this
file fails, rather than skips, without it.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from contextualized_topic_models.models.ctm import CTM as PackageCTM
from contextualized_topic_models.models.ctm import CombinedTM, ZeroShotTM
from torch import nn

from topicbench.baselines import _neural
from topicbench.baselines.ctm import CTM
from topicbench.core.corpus import Corpus

VOCABULARY_SIZE, NUM_TOPICS, EMBEDDING_SIZE = 30, 5, 8
PACKAGE_MODELS = {"combined": CombinedTM, "zeroshot": ZeroShotTM}
#: CTM's defaults, then a deeper, narrower encoder (three hidden layers)
HIDDEN_SIZES = [(100, 100), (16, 12, 10)]


def package_model(variant: str, hidden_sizes) -> PackageCTM:
    """The package's CombinedTM or ZeroShotTM at its defaults (its network is ``.model``), kept
    on the CPU like ours, with no DataLoader worker processes."""
    package = PACKAGE_MODELS[variant](
        bow_size=VOCABULARY_SIZE, contextual_size=EMBEDDING_SIZE, n_components=NUM_TOPICS,
        hidden_sizes=hidden_sizes, num_data_loader_workers=0,
    )
    package.model.cpu()  # a GPU machine would have moved it; the optimizer keeps the same tensors
    package.USE_CUDA, package.device = False, torch.device("cpu")
    return package


def our_network(variant: str, hidden_sizes):
    """Our CTM network as :class:`CTM` builds it, at its defaults."""
    defaults = CTM.defaults
    return _neural.build_prodlda_network(
        vocabulary_size=VOCABULARY_SIZE, num_topics=NUM_TOPICS, embedding_size=EMBEDDING_SIZE,
        inputs=CTM(NUM_TOPICS, variant=variant).encoder_inputs, hidden_sizes=hidden_sizes,
        dropout=defaults["dropout"], learn_priors=CTM.learn_priors, prior_alpha=defaults["prior_alpha"],
    )


def in_package_layout(network, *, gradients: bool = False) -> dict:
    """Our network's state under the package's ``DecoderNetwork.state_dict()`` names and layouts
    (parameters and BatchNorm buffers), or, with ``gradients``, its parameters' gradients under
    the package's parameter names.

    Layouts: our :class:`SparseLinear` weight is (in, out), the transpose of ``nn.Linear``'s; the
    package's CombinedTM input layer reads [bag of words | adapted embedding] along its input
    axis, where ours is a sparse bag-of-words block (which carries the bias) plus a dense
    embedding block.
    """
    def read(parameter):
        return parameter.grad if gradients else parameter.detach()

    state = {}

    def linear(name, layer):
        state[f"{name}.weight"], state[f"{name}.bias"] = read(layer.weight), read(layer.bias)

    if network.inputs == "combined":
        linear("inf_net.adapt_bert", network.adapt_embedding)
        state["inf_net.input_layer.weight"] = torch.cat(
            [read(network.bow_layer.weight).T, read(network.embedding_layer.weight)], dim=1
        )
        state["inf_net.input_layer.bias"] = read(network.bow_layer.bias)
    else:
        linear("inf_net.input_layer", network.embedding_layer)
    hidden_layers = [layer for layer in network.hidden if isinstance(layer, nn.Linear)]
    for i, layer in enumerate(hidden_layers):
        linear(f"inf_net.hiddens.l_{i}.0", layer)
    linear("inf_net.f_mu", network.mean)
    linear("inf_net.f_sigma", network.log_variance)
    for name in ("prior_mean", "prior_variance", "beta"):
        state[name] = read(getattr(network, name))
    if not gradients:
        norms = {"inf_net.f_mu_batchnorm": network.mean_norm, "inf_net.f_sigma_batchnorm": network.log_variance_norm,
                 "beta_batchnorm": network.beta_norm}
        for prefix, norm in norms.items():
            state.update({f"{prefix}.{name}": buffer for name, buffer in norm.named_buffers()})
    return state


def a_batch():
    """Six documents of a random sparse count matrix (every one with words), their dense rows
    (the package's input) and their embeddings."""
    counts = sp.random(20, VOCABULARY_SIZE, density=0.3, format="csr", random_state=4)
    counts.data = np.ceil(counts.data * 4).astype(np.float32)
    rows = [3, 17, 0, 8, 11, 5]
    assert np.all(np.diff(counts[rows].indptr) > 0)
    dense = torch.from_numpy(counts[rows].toarray())
    embedding = torch.randn(len(rows), EMBEDDING_SIZE, generator=torch.Generator().manual_seed(5))
    return counts, rows, dense, embedding


@pytest.mark.parametrize("hidden_sizes", HIDDEN_SIZES)
@pytest.mark.parametrize("variant", ["combined", "zeroshot"])
def test_a_seed_gives_the_packages_layers_and_initial_weights(variant, hidden_sizes):
    torch.manual_seed(0)
    package = package_model(variant, hidden_sizes)
    torch.manual_seed(0)
    ours = our_network(variant, hidden_sizes)
    expected = package.model.state_dict()
    state = in_package_layout(ours)
    # the same layers (names and shapes), drawn in the same order: the same values
    assert state.keys() == expected.keys()
    for name, value in expected.items():
        torch.testing.assert_close(state[name], value, rtol=0, atol=0, msg=lambda text: f"{name}: {text}")
    # the prior starts at mean 0, variance 1 - 1/K (the package's), and is learned
    start = torch.full((NUM_TOPICS,), 1 - 1 / NUM_TOPICS)
    torch.testing.assert_close(ours.prior_variance.detach(), start, rtol=0, atol=0)
    assert {"prior_mean", "prior_variance", "beta"} <= dict(ours.named_parameters()).keys()
    # the same dropouts (the package's encoder dropout is its InferenceNetwork's default, 0.2) and
    # unscaled BatchNorms
    assert ours.encoder_dropout.p == package.model.inf_net.dropout_enc.p == 0.2
    assert ours.theta_dropout.p == package.model.drop_theta.p == 0.2
    norms = [
        (ours.mean_norm, package.model.inf_net.f_mu_batchnorm),
        (ours.log_variance_norm, package.model.inf_net.f_sigma_batchnorm),
        (ours.beta_norm, package.model.beta_batchnorm),
    ]
    for our_norm, package_norm in norms:
        assert not our_norm.affine and not package_norm.affine
        assert (our_norm.eps, our_norm.momentum) == (package_norm.eps, package_norm.momentum)
    assert isinstance(package.model.inf_net.activation, nn.Softplus)
    assert all(isinstance(layer, nn.Softplus) for layer in ours.hidden if not isinstance(layer, nn.Linear))


@pytest.mark.parametrize("hidden_sizes", HIDDEN_SIZES)
@pytest.mark.parametrize("variant", ["combined", "zeroshot"])
def test_the_packages_loss_and_gradients_at_the_same_parameters_and_batch(variant, hidden_sizes):
    torch.manual_seed(1)
    package = package_model(variant, hidden_sizes)
    torch.manual_seed(2)  # another seed: the package's weights are our copied ones, not its own
    ours = our_network(variant, hidden_sizes)
    package.model.load_state_dict(in_package_layout(ours), strict=True)
    counts, rows, dense, embedding = a_batch()

    # the package's own training step (train mode; forward, CTM._loss, backward, then its Adam
    # step, which leaves the gradients in place); it returns the loss per document. The seed
    # set just before each forward gives both the same dropout masks and noise, which both draw
    # in the same order: encoder dropout, reparameterisation noise, θ dropout.
    torch.manual_seed(7)
    processed, package_loss_per_document = package._train_epoch([{"X_bow": dense, "X_contextual": embedding}])
    assert processed == len(rows)
    ours.train()
    bag = _neural.BagOfWords(counts, rows)
    torch.manual_seed(7)
    loss = ours.loss(bag, embedding)
    loss.backward()

    np.testing.assert_allclose(float(loss.detach()) / len(rows), package_loss_per_document, rtol=1e-5)
    package_gradients = {name: parameter.grad for name, parameter in package.model.named_parameters()}
    gradients = in_package_layout(ours, gradients=True)
    assert gradients.keys() == package_gradients.keys()
    # float32 rounding differs where ours sums sparse entries and the package dense rows: each
    # gradient is compared to its own scale, plus a floor at the largest gradient's scale for
    # those that are 0 up to rounding (the biases under BatchNorm; the prior mean while it is 0)
    largest = max(float(gradient.abs().max()) for gradient in package_gradients.values())
    assert largest > 1.0
    for name, gradient in package_gradients.items():
        atol = 1e-5 * float(gradient.abs().max()) + 1e-6 * largest
        torch.testing.assert_close(gradients[name], gradient, rtol=1e-5, atol=atol, msg=lambda text: f"{name}: {text}")
    # the forward updated the BatchNorm running statistics alike (they give eval-mode μ)
    package_state = package.model.state_dict()
    for name, value in in_package_layout(ours).items():
        if "batchnorm" in name:
            torch.testing.assert_close(
                value, package_state[name], rtol=1e-5, atol=1e-6, msg=lambda text: f"{name}: {text}"
            )
    # the comparison sees the noise: another seed gives another loss
    with torch.no_grad():
        torch.manual_seed(8)
        assert abs(float(ours.loss(bag, embedding)) - float(loss)) > 1e-3


@pytest.mark.parametrize("variant", ["combined", "zeroshot"])
def test_eval_posterior_and_topic_word_distribution_are_the_packages(variant):
    torch.manual_seed(3)
    ours = our_network(variant, (100, 100))
    counts, rows, dense, embedding = a_batch()
    bag = _neural.BagOfWords(counts, rows)
    ours.train()
    with torch.no_grad():
        ours.loss(bag, embedding)  # running statistics away from their start
    package = package_model(variant, (100, 100))
    package.model.load_state_dict(in_package_layout(ours), strict=True)
    ours.eval()
    package.model.eval()
    with torch.no_grad():
        package_mean, package_log_variance = package.model.get_posterior(dense, embedding)
        mean, log_variance = ours.encode(bag, embedding)
        package.model(dense, embedding)  # a forward sets the package's topic_word_matrix (β)
        topic_word = ours.topic_word()
    torch.testing.assert_close(mean, package_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(log_variance, package_log_variance, rtol=1e-5, atol=1e-6)
    # our θ is softmax(μ) of this posterior (the package's get_doc_topic_distribution averages
    # 20 samples of softmax(μ + σ ε) instead: a difference of the inference, not the network)
    torch.testing.assert_close(ours.theta(bag, embedding), torch.softmax(package_mean, dim=1), rtol=1e-5, atol=1e-7)
    # the topic-word distribution: softmax(β) by rows, as the package's
    np.testing.assert_allclose(topic_word.numpy(), package.get_topic_word_distribution(), rtol=1e-5, atol=1e-8)


def test_ctm_defaults_are_the_packages():
    signature = inspect.signature(PackageCTM.__init__)
    package_defaults = {name: parameter.default for name, parameter in signature.parameters.items()}
    ours_to_package = {
        "epochs": "num_epochs", "batch_size": "batch_size", "learning_rate": "lr", "momentum": "momentum",
        "hidden_sizes": "hidden_sizes", "dropout": "dropout", "variant": "inference_type",
    }
    for ours, theirs in ours_to_package.items():
        assert CTM.defaults[ours] == package_defaults[theirs], ours
    assert (CTM.defaults["epochs"], CTM.defaults["batch_size"], CTM.defaults["learning_rate"]) == (100, 64, 2e-3)
    assert (CTM.defaults["momentum"], CTM.defaults["hidden_sizes"], CTM.defaults["dropout"]) == (0.99, (100, 100), 0.2)
    # a prodLDA decoder, softplus encoder, Adam, learned priors; the prior is the Laplace
    # approximation at alpha = 1, which the package hard-codes (mean 0, variance 1 - 1/K)
    assert package_defaults["model_type"] == "prodLDA" and package_defaults["activation"] == "softplus"
    assert package_defaults["solver"] == "adam" and package_defaults["learn_priors"] is CTM.learn_priors is True
    assert CTM.defaults["prior_alpha"] == 1.0


def _tiny_corpus(n_documents: int = 40) -> Corpus:
    random = np.random.default_rng(0)
    lengths = random.integers(5, 15, size=n_documents)
    return Corpus(
        vocabulary=tuple(f"w{i}" for i in range(VOCABULARY_SIZE)),
        token_ids=random.integers(0, VOCABULARY_SIZE, size=int(lengths.sum())).astype(np.int32),
        doc_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        name="tiny",
    )


@pytest.mark.parametrize("variant", ["combined", "zeroshot"])
def test_a_ctm_fit_has_the_packages_optimizer_and_topic_word_output(variant, monkeypatch):
    corpus = _tiny_corpus()
    embeddings = np.random.default_rng(1).normal(size=(corpus.n_documents, EMBEDDING_SIZE)).astype(np.float32)
    monkeypatch.setattr(CTM, "_embeddings", lambda self, corpus: embeddings)  # no sentence encoder
    optimizers, adam = [], _neural.adam

    def recording_adam(parameters, **settings):
        optimizers.append(adam(parameters, **settings))
        return optimizers[-1]

    monkeypatch.setattr(_neural, "adam", recording_adam)
    model = CTM(NUM_TOPICS, random_state=0, variant=variant, epochs=1)
    output = model.fit(corpus).output_
    package = package_model(variant, CTM.defaults["hidden_sizes"])

    # Adam with the package's lr and betas (momentum, 0.99), over every parameter, priors included
    (optimizer,) = optimizers
    (group,), (package_group,) = optimizer.param_groups, package.optimizer.param_groups
    for setting in ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"):
        assert group[setting] == package_group[setting], setting
    assert group["betas"] == (0.99, 0.99)
    optimized = {id(parameter) for parameter in group["params"]}
    assert optimized == {id(parameter) for parameter in model.network_.parameters()}
    assert len(group["params"]) == len(package_group["params"]) + (variant == "combined")  # input layer in two blocks

    # the output's topic-word matrix is the package's get_topic_word_distribution of the network
    package.model.load_state_dict(in_package_layout(model.network_), strict=True)
    package.model.eval()
    with torch.no_grad():
        dense = torch.from_numpy(corpus.doc_term[:4].toarray().astype(np.float32))
        package.model(dense, torch.from_numpy(embeddings[:4]))
    np.testing.assert_allclose(output.topic_word_matrix, package.get_topic_word_distribution(), rtol=1e-5, atol=1e-8)
