"""FASTopic (Wu et al. 2024) on torch (CUDA when available), with the local all-MiniLM-L6-v2
document embeddings.

Written here rather than wrapping the ``fastopic`` package (1.0.1): it requires ``topmost``,
which requires ``torchvision``, so installing it pulls torchvision beside torch 2.13.0 (not
allowed in this project); ``fastopic`` itself also builds its own vocabulary with topmost's
preprocessing, where this suite needs the corpus's vocabulary. The model is the package's
(``fastopic/_fastopic.py`` and ``_ETP.py``), its loss and gradients equal to the package's at
equal parameters (``tests/baselines/test_fastopic_fidelity.py`` runs both):

- documents (their sentence embeddings), topics and words live in one embedding space;
- Embedding Transport Plans (entropic optimal transport, the package's log-domain Sinkhorn)
  link documents to topics (``DT``: document marginals uniform, topic marginals
  softmax(w_t)) and topics to words (``TW``: topic marginals uniform, word marginals
  softmax(w_v)), with cost the squared Euclidean distances;
- θ = D · π_DT and β = K · π_TW; the loss is the Dual Semantic-relation Reconstruction
  −mean_d Σ_w x_dw log (θ_d · β_w + ε) plus both transport costs ⟨π, M⟩;
- full-batch Adam, 200 epochs, learning rate 0.002; topic embeddings, word embeddings and both
  marginal weights are learned; document embeddings are fixed. Initialisation as the package's
  (``trunc_normal_`` then row-normalised embeddings, topic embeddings drawn first; weights 1/K
  and 1/V), so that one seed gives the package's initial parameters.

Two pieces are computed differently from the package, with the same result:

- the reconstruction reads θ_d · β_w at the stored (document, word) entries only (a sampled
  product, ``torch.sparse.sampled_addmm``, whose backward pass is two sparse products), where
  the package forms the dense D x V product θ β and the dense count matrix: the zero counts
  add nothing to the loss or its gradient. On reuters (10,727 x 24,035) the dense matrices are
  1 GB each and were most of the package's epoch;
- the Sinkhorn iterations between two absorptions run as matrix-vector products with the
  absorbed kernel (the same iterates as the package's log-sum-exp updates: after absorbing, the
  scalings start at 1 and stay moderate), and the gradient through all the iterations is
  written out (:func:`_sinkhorn_function`) rather than taped op by op: the package's autograd
  graph keeps two n x m tensors per iteration. The first step (raw kernel exp(−αM), whose
  entries may underflow) and any window whose plain-domain products stop being finite run in
  the log domain exactly as the package does.

References
----------
X. Wu, T. Nguyen, D. C. Zhang, W. Y. Wang, A. T. Luu, "FASTopic: Pretrained Transformer is a
Fast, Adaptive, Stable, and Transferable Topic Model", NeurIPS 2024 (§3: DSR and ETP, eq. 3-7).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp

from topicbench.core.config import OUTPUT_TOP_WORDS
from topicbench.core.corpus import Corpus
from topicbench.core.output import TopicModelOutput

from . import _neural
from .base import (
    ModelError, TopicModel, normalize_rows, require_integers, require_positive, top_words_of, training_record,
)

logger = logging.getLogger(__name__)

#: Added inside log(θ_d · β_w) of the reconstruction (the package's constant).
DSR_EPSILON = 1e-12
#: Sinkhorn absorbs its scalings into the kernel, and checks convergence, at the steps
#: 1, 1 + this, 1 + 2 x this, ... (the package's schedule: ``cpt % 50 == 1``).
SINKHORN_CHECK_INTERVAL = 50
#: Added to each marginal inside its log (the package's constant).
SINKHORN_LOG_FLOOR = 1e-30


class FASTopic(TopicModel):
    """FASTopic.

    Settings
    --------
    epochs : int
        Full-batch training epochs (package default 200).
    learning_rate : float
        Adam's step size (0.002).
    dt_alpha, tw_alpha : float
        Sinkhorn entropic-regularisation strengths (inverse temperatures) of the
        document-topic and topic-word transport plans (3 and 2).
    theta_temperature : float
        Temperature of the distance softmax giving document proportions (1).
    sinkhorn_max_iterations : int
        Sinkhorn steps at most per transport plan (5000).
    sinkhorn_tolerance : float
        Stop when the larger of the two marginals' L1 errors is at most this (0.005).
    embedding_model : str or None
        A local sentence-transformers folder (``None``: the bundled all-MiniLM-L6-v2).
    threads : int
        torch CPU threads during the fit.
    top_words : int
        Words per topic in the output's topic lists.

    Notes
    -----
    Topic-word rows are the package's ``get_beta`` (β = K · π_TW) normalised to sum to 1 (π_TW's
    row sums are close to, not exactly, 1/K after a finite number of Sinkhorn steps). Document
    proportions are the package's ``transform`` (``get_theta``) for the training documents:
    exp(−‖e_d − t_k‖² / τ) divided by its sum over training documents, then normalised per
    document. ``extra["training_loss"]`` is the training loss of each epoch (the package's
    ``loss``: reconstruction plus both transport costs).
    """

    name = "fastopic"
    defaults = {
        "epochs": 200,
        "learning_rate": 0.002,
        "dt_alpha": 3.0,
        "tw_alpha": 2.0,
        "theta_temperature": 1.0,
        "sinkhorn_max_iterations": 5000,
        "sinkhorn_tolerance": 0.005,
        "embedding_model": None,
        "threads": 1,
        "top_words": OUTPUT_TOP_WORDS,
    }
    supports_transform = True
    uses_document_embeddings = True

    def _check_settings(self, settings: dict) -> None:
        require_integers(self.name, settings, {"epochs": 1, "sinkhorn_max_iterations": 1, "threads": 1, "top_words": 1})
        require_positive(
            self.name, settings, ["learning_rate", "dt_alpha", "tw_alpha", "theta_temperature", "sinkhorn_tolerance"]
        )

    def _setup(self, corpus: Corpus) -> None:
        """Import torch and load the corpus's (cached) document embeddings before the timed fit."""
        from .embeddings import document_embeddings

        _neural.load_torch(self.name)
        document_embeddings(corpus, model_path=self.settings["embedding_model"])

    def _fit(self, corpus: Corpus, num_topics: int | None, seed: int) -> TopicModelOutput:
        torch = _neural.load_torch(self.name)
        from .embeddings import document_embeddings

        num_topics = self._require_num_topics(num_topics)
        settings = self.settings
        embeddings = document_embeddings(corpus, model_path=settings["embedding_model"])
        device = _neural.torch_device()
        with _neural.seeded(seed, settings["threads"]):
            entries = WordCounts(torch, corpus.doc_term, device)  # the full batch
            network = build_network(torch, num_topics, corpus.n_words, embeddings.shape[1], settings).to(device)
            document_vectors = torch.as_tensor(embeddings, dtype=torch.float32).to(device)
            optimizer = _neural.adam(network.parameters(), lr=float(settings["learning_rate"]))
            trace = []
            epochs = int(settings["epochs"])
            for epoch in range(1, epochs + 1):
                loss = network.loss(document_vectors, entries)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                trace.append(float(loss.detach()))
                if not np.isfinite(trace[-1]):
                    raise ModelError(f"{self.name}: the training loss became {trace[-1]} at epoch {epoch}")
                if epoch == 1 or epoch % 20 == 0 or epoch == epochs:
                    logger.info(
                        "fastopic: epoch %d/%d, loss %.4f (Sinkhorn steps: DT %d, TW %d)", epoch, epochs,
                        trace[-1], network.sinkhorn["DT"]["steps"], network.sinkhorn["TW"]["steps"],
                    )
            with torch.no_grad():
                topic_word = normalize_rows(network.get_beta().double().cpu().numpy())
                theta = network.get_theta(document_vectors, document_vectors).double().cpu().numpy()
        self.network_ = network
        self.train_document_vectors_ = document_vectors
        return TopicModelOutput(
            model=self.name,
            vocabulary=tuple(corpus.vocabulary),
            topics=top_words_of(topic_word, corpus.vocabulary, int(settings["top_words"])),
            topic_word_matrix=topic_word,
            topic_document_matrix=normalize_rows(theta).T.copy(),
            settings={**settings, "num_topics_": num_topics, "embedding_size_": int(embeddings.shape[1]), "device_": device},
            seed=seed,
            extra=training_record(trace, kind="DSR reconstruction + both transport costs (full batch)"),
        )

    def _transform(self, corpus: Corpus) -> np.ndarray:
        import torch

        from .embeddings import document_embeddings

        embeddings = document_embeddings(corpus, model_path=self.settings["embedding_model"])
        vectors = torch.as_tensor(embeddings, dtype=torch.float32).to(self.train_document_vectors_.device)
        with _neural.seeded(0, self.settings["threads"]), torch.no_grad():
            theta = self.network_.get_theta(vectors, self.train_document_vectors_).double().cpu().numpy()
        return normalize_rows(theta).T.copy()


def _squared_distances(x, y):
    """‖x_i − y_j‖² for all pairs (the package's ``pairwise_euclidean_distance``, same ops)."""
    return (x**2).sum(dim=1, keepdim=True) + (y**2).sum(dim=1) - 2 * x @ y.T


class WordCounts:
    """A document-term count matrix as the (document, word, count) entries the reconstruction
    reads: the sparsity pattern as a torch CSR tensor (for ``sampled_addmm``), and the entries
    grouped by document and by word (for the two ``embedding_bag`` products of the backward
    pass). Built once per fit."""

    def __init__(self, torch, doc_term, device: str = "cpu"):
        self._function = _sampled_product_function(torch)
        matrix = sp.csr_matrix(doc_term, dtype=np.float32, copy=True)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        matrix.sort_indices()
        self.n_documents, self.n_words = matrix.shape
        indptr = torch.from_numpy(matrix.indptr.astype(np.int64))
        self.words = torch.from_numpy(matrix.indices.astype(np.int64))
        self.counts = torch.from_numpy(matrix.data)
        self.document_offsets = indptr[:-1]
        documents = np.repeat(np.arange(self.n_documents, dtype=np.int64), np.diff(matrix.indptr))
        order = np.argsort(matrix.indices, kind="stable")
        self.by_word = torch.from_numpy(order.astype(np.int64))
        self.documents_by_word = torch.from_numpy(documents[order])
        per_word = np.bincount(matrix.indices, minlength=self.n_words)
        self.word_offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(per_word)[:-1]]).astype(np.int64))
        with warnings.catch_warnings():  # "sparse CSR support is in beta state"
            warnings.simplefilter("ignore", UserWarning)
            self.pattern = torch.sparse_csr_tensor(
                indptr, self.words, torch.ones(len(self.words)), size=matrix.shape, check_invariants=False
            ).to(device)
        for name in ("words", "counts", "document_offsets", "by_word", "documents_by_word", "word_offsets"):
            setattr(self, name, getattr(self, name).to(device))

    def products(self, theta, beta):
        """θ_d · β_w at every stored entry (d, w), in CSR order, differentiable in θ and β."""
        return self._function.apply(theta, beta, self)


_FUNCTIONS: dict = {}


def _sampled_product_function(torch):
    """The autograd function p_e = θ_{d_e} · β_{w_e} over the stored entries e of a
    :class:`WordCounts`: forward one sampled dense-dense product, backward dθ = G βᵀ and
    dβᵀ = Gᵀ θ for the sparse matrix G of the entries' gradients (``embedding_bag`` sums)."""
    if "sampled" in _FUNCTIONS:
        return _FUNCTIONS["sampled"]
    from torch.nn import functional

    class SampledProduct(torch.autograd.Function):
        @staticmethod
        def forward(ctx, theta, beta, counts):
            ctx.save_for_backward(theta, beta)
            ctx.counts = counts
            pattern = counts.pattern
            if pattern.dtype != theta.dtype or pattern.device != theta.device:
                pattern = pattern.to(device=theta.device, dtype=theta.dtype)
            return torch.sparse.sampled_addmm(pattern, theta, beta, beta=0.0).values()

        @staticmethod
        def backward(ctx, grad):
            theta, beta = ctx.saved_tensors
            counts = ctx.counts
            grad_theta = grad_beta = None
            if ctx.needs_input_grad[0]:
                grad_theta = functional.embedding_bag(
                    counts.words, beta.T.contiguous(), counts.document_offsets, mode="sum", per_sample_weights=grad
                )
            if ctx.needs_input_grad[1]:
                grad_beta = functional.embedding_bag(
                    counts.documents_by_word, theta, counts.word_offsets, mode="sum",
                    per_sample_weights=grad[counts.by_word],
                ).T
            return grad_theta, grad_beta, None

    _FUNCTIONS["sampled"] = SampledProduct
    return SampledProduct


def _transport_plan(torch, cost, a, b, alpha: float, max_iterations: int, tolerance: float, stats: dict | None = None):
    """The package's ``ETP.forward`` plan for ``cost`` (n x m) and marginals ``a`` (n x 1, rows)
    and ``b`` (m x 1, columns): entropic optimal transport by log-domain Sinkhorn.

    log K = −alpha · cost; each step sets log v = log b − logsumexp_i(log K + log u) and then
    log u = log a − logsumexp_j(log K + log v), with log a = log(a + 1e-30) and log b likewise.
    At steps 1, 51, 101, ... the scalings are absorbed into log K (and reset to 0) and the
    convergence error max(‖P 1 − a‖₁, ‖Pᵀ 1 − b‖₁) of the plan P = diag(u) K diag(v) is
    checked; the loop stops when it is at most ``tolerance`` or after ``max_iterations`` steps.
    Differentiable in ``cost``, ``a`` and ``b`` through every iteration, as the package's
    autograd graph is. ``stats``, when given, receives the number of steps and of windows
    computed in the log domain.
    """
    log_a = torch.log(a + SINKHORN_LOG_FLOOR)
    log_b = torch.log(b + SINKHORN_LOG_FLOOR)
    plan = _sinkhorn_function(torch).apply(
        cost, log_a, log_b, a.detach(), b.detach(), float(alpha), int(max_iterations), float(tolerance), stats
    )
    return plan


def _sinkhorn_function(torch):
    """The autograd function of :func:`_transport_plan` (built once, torch imported lazily).

    Forward. The steps run in windows between two absorptions: step 1 alone on the raw kernel
    (in the log domain, the package's operations), then up to 50 steps on each absorbed kernel
    L (absorbed as the package does, L ← L + log u ⊕ log v), whose exponential E = exp(L) is
    what the convergence check sums anyway: there the updates are log v = log b − log(Eᵀ u) and
    log u = log a − log(E v), two matrix-vector products (if one of them is not finite, the
    window is recomputed in the log domain). Kept for the backward pass: each window's L and its
    potentials, not the per-step n x m tensors.

    Backward, through every step. For a step's row update log u = log a − LSE_j(L + log v) with
    row-softmax S = E ∘ (exp(log u − log a) ⊗ exp(log v)), an incoming gradient g_u gives
    d log a += g_u, dL −= S ∘ (g_u ⊗ 1) and d log v −= Sᵀ g_u; the column update is its mirror
    image with the column-softmax R = E ∘ (exp(log u_prev) ⊗ exp(log v − log b)). Within a
    window every dL term is E times an outer product, so the window's dL is −E ∘ (A Bᵀ) for the
    n x 2s and m x 2s stacks A, B of those vectors: one matrix product instead of 2s full-size
    tensors. An absorption log K' = log K + log u ⊕ log v passes dL on unchanged and its row and
    column sums to log u and log v. The log-domain windows are differentiated step by step with
    explicit softmax matrices.
    """
    if "sinkhorn" in _FUNCTIONS:
        return _FUNCTIONS["sinkhorn"]

    def log_window(frame, la, lb, steps):
        lu = torch.zeros_like(la)
        us, vs = [lu], []
        for _ in range(steps):
            lv = lb - torch.logsumexp(frame + lu[:, None], dim=0)
            lu = la - torch.logsumexp(frame + lv[None, :], dim=1)
            us.append(lu)
            vs.append(lv)
        return us, vs

    def kernel_window(kernel, la, lb, steps):
        lu = torch.zeros_like(la)
        us, vs = [lu], []
        for _ in range(steps):
            lv = lb - torch.log(torch.mv(kernel.T, lu.exp()))
            lu = la - torch.log(torch.mv(kernel, lv.exp()))
            us.append(lu)
            vs.append(lv)
        finite = bool(torch.isfinite(torch.stack(us)).all()) and bool(torch.isfinite(torch.stack(vs)).all())
        return (us, vs) if finite else None

    def log_window_backward(frame, la, lb, us, vs, gu, gv):
        d_frame = torch.zeros_like(frame)
        d_la, d_lb = torch.zeros_like(la), torch.zeros_like(lb)
        for s in range(len(vs), 0, -1):
            rows = torch.softmax(frame + vs[s - 1][None, :], dim=1)  # ∂ log u_s / ∂ (frame, log v_s)
            d_la += gu
            d_frame -= gu[:, None] * rows
            gv = gv - rows.T @ gu
            columns = torch.softmax(frame + us[s - 1][:, None], dim=0)  # ∂ log v_s / ∂ (frame, log u_{s-1})
            d_lb += gv
            d_frame -= columns * gv[None, :]
            gu = -(columns @ gv)
            gv = torch.zeros_like(gv)
        return d_frame, d_la, d_lb

    def kernel_window_backward(kernel, la, lb, us, vs, gu, gv):
        d_la, d_lb = torch.zeros_like(la), torch.zeros_like(lb)
        left, right = [], []
        for s in range(len(vs), 0, -1):
            lu, lv, lu_before = us[s], vs[s - 1], us[s - 1]
            d_la += gu
            row_scale = gu * (lu - la).exp()
            column = lv.exp()
            gv = gv - column * torch.mv(kernel.T, row_scale)
            left.append(row_scale)
            right.append(column)
            d_lb += gv
            row = lu_before.exp()
            column_scale = gv * (lv - lb).exp()
            gu = -(row * torch.mv(kernel, column_scale))
            left.append(row)
            right.append(column_scale)
            gv = torch.zeros_like(gv)
        d_frame = torch.stack(left, dim=1) @ torch.stack(right, dim=0)
        d_frame.mul_(kernel).neg_()
        return d_frame, d_la, d_lb

    class Sinkhorn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, cost, log_a, log_b, a, b, alpha, max_iterations, tolerance, stats):
            # the package's marginals may be float32 beside a float64 cost: its ops then promote
            la, lb = (v.detach().reshape(-1).to(cost.dtype) for v in (log_a, log_b))
            a, b = a.reshape(-1), b.reshape(-1)
            frame = log_kernel = -cost.detach() * alpha  # the package's log_K, absorbed as it does
            kernel = None  # exp(frame) after an absorption
            windows = []  # (frame, or None for the raw kernel; "log" or "kernel"; log u's; log v's)
            error, step, absorbed = 1.0, 0, True
            while error > tolerance and step < max_iterations:
                steps = 1 if step == 0 else min(SINKHORN_CHECK_INTERVAL, max_iterations - step)
                result = None if kernel is None else kernel_window(kernel, la, lb, steps)
                mode = "kernel"
                if result is None:
                    result, mode = log_window(frame, la, lb, steps), "log"
                us, vs = result
                windows.append((None if step == 0 else frame, mode, us, vs))
                step += steps
                absorbed = step % SINKHORN_CHECK_INTERVAL == 1
                if absorbed:
                    frame = frame + us[-1][:, None] + vs[-1][None, :]
                    kernel = frame.exp()
                    error = max(float((kernel.sum(dim=1) - a).abs().sum()), float((kernel.sum(dim=0) - b).abs().sum()))
            if kernel is None:
                kernel = frame.exp()
            if absorbed:
                plan = kernel
            else:
                plan = us[-1].exp()[:, None] * (kernel * vs[-1].exp()[None, :])
            if stats is not None:
                stats["steps"] = step
                stats["log_windows"] = sum(mode == "log" for _, mode, _, _ in windows)
                stats["error"] = error
            ctx.save_for_backward(cost, la, lb, plan)
            ctx.alpha, ctx.windows = alpha, windows
            ctx.marginals = [(v.dtype, v.shape) for v in (log_a, log_b)]
            return plan

        @staticmethod
        def backward(ctx, grad_plan):
            cost, la, lb, plan = ctx.saved_tensors
            d_log_kernel = grad_plan * plan  # the gradient of log P
            gu, gv = d_log_kernel.sum(dim=1), d_log_kernel.sum(dim=0)
            d_la, d_lb = torch.zeros_like(la), torch.zeros_like(lb)
            for index in range(len(ctx.windows) - 1, -1, -1):
                frame, mode, us, vs = ctx.windows[index]
                if frame is None:
                    frame = -cost * ctx.alpha
                d_frame = None
                if mode == "kernel":
                    d_frame, d_la_w, d_lb_w = kernel_window_backward(frame.exp(), la, lb, us, vs, gu, gv)
                    if not bool(torch.isfinite(d_frame).all()):
                        d_frame = None
                if d_frame is None:
                    d_frame, d_la_w, d_lb_w = log_window_backward(frame, la, lb, us, vs, gu, gv)
                d_la += d_la_w
                d_lb += d_lb_w
                d_log_kernel += d_frame
                if index > 0:  # this window's frame absorbed the previous window's last log u, log v
                    gu = gu + d_frame.sum(dim=1)
                    gv = gv + d_frame.sum(dim=0)
            d_cost = d_log_kernel.mul_(-ctx.alpha) if ctx.needs_input_grad[0] else None
            d_log_a = d_la.to(ctx.marginals[0][0]).view(ctx.marginals[0][1]) if ctx.needs_input_grad[1] else None
            d_log_b = d_lb.to(ctx.marginals[1][0]).view(ctx.marginals[1][1]) if ctx.needs_input_grad[2] else None
            return d_cost, d_log_a, d_log_b, None, None, None, None, None, None

    _FUNCTIONS["sinkhorn"] = Sinkhorn
    return Sinkhorn


def build_network(torch, num_topics, vocabulary_size, embedding_size, settings):
    """FASTopic's parameters and loss as a module (built inside a seeded block): the package's
    ``fastopic`` module after ``init(vocabulary_size, embedding_size)``, with its parameters
    drawn in the same order and its ``forward``, ``get_beta`` and ``get_theta``."""
    from torch import nn
    from torch.nn import functional

    max_iterations, tolerance = int(settings["sinkhorn_max_iterations"]), float(settings["sinkhorn_tolerance"])

    class Network(nn.Module):
        def __init__(self):
            super().__init__()
            self.topic_embeddings = nn.Parameter(
                functional.normalize(nn.init.trunc_normal_(torch.empty((num_topics, embedding_size))))
            )
            self.topic_weights = nn.Parameter((torch.ones(num_topics) / num_topics).unsqueeze(1))
            self.word_embeddings = nn.Parameter(
                functional.normalize(nn.init.trunc_normal_(torch.empty(vocabulary_size, embedding_size)))
            )
            self.word_weights = nn.Parameter((torch.ones(vocabulary_size) / vocabulary_size).unsqueeze(1))
            #: the last plans' Sinkhorn statistics (steps, log-domain windows, final error)
            self.sinkhorn = {"DT": {}, "TW": {}}

        def _plan(self, name, x, y, b, alpha):
            """The package's ETP: plan and transport cost between x (rows, uniform marginals) and y."""
            cost = _squared_distances(x, y)
            a = (torch.ones(cost.shape[0], dtype=cost.dtype, device=cost.device) / cost.shape[0]).unsqueeze(1)
            stats = {}
            plan = _transport_plan(torch, cost, a, b, alpha, max_iterations, tolerance, stats)
            self.sinkhorn[name] = stats
            return plan, (plan * cost).sum()

        def _topic_word_plan(self):
            b = functional.softmax(self.word_weights, dim=0)
            return self._plan("TW", self.topic_embeddings, self.word_embeddings, b, float(settings["tw_alpha"]))

        def get_beta(self):
            """β = K · π_TW (K x V), the package's ``get_beta``."""
            plan, _ = self._topic_word_plan()
            return plan * plan.shape[0]

        def get_theta(self, document_vectors, train_document_vectors):
            """The package's ``get_theta``: exp(−‖e_d − t_k‖² / τ) over its sum over the training
            documents, normalised per document."""
            temperature = float(settings["theta_temperature"])
            topics = self.topic_embeddings.detach()
            weights = torch.exp(-_squared_distances(document_vectors, topics) / temperature)
            train_weights = torch.exp(-_squared_distances(train_document_vectors, topics) / temperature)
            theta = weights / train_weights.sum(0)
            return theta / theta.sum(1, keepdim=True)

        def loss(self, document_vectors, counts: WordCounts):
            """The package's ``forward(train_bow, doc_embeddings)["loss"]`` on the full batch."""
            b = functional.softmax(self.topic_weights, dim=0)
            plan_dt, cost_dt = self._plan("DT", document_vectors, self.topic_embeddings, b, float(settings["dt_alpha"]))
            plan_tw, cost_tw = self._topic_word_plan()
            theta = plan_dt * plan_dt.shape[0]
            beta = plan_tw * plan_tw.shape[0]
            # −(1/D) Σ_d Σ_w x_dw log(θ_d · β_w + ε), over the non-zero counts only
            products = counts.products(theta, beta)
            dsr = -(counts.counts * (products + DSR_EPSILON).log()).sum() / counts.n_documents
            return dsr + (cost_dt + cost_tw)

    return Network()
