"""torch pieces of FASTopic (:mod:`topicbench.baselines.fastopic`): the network
(:class:`FASTopicNetwork`), its sparse reconstruction (:class:`WordCounts`,
:class:`SampledProduct`) and the log-domain Sinkhorn with a written-out gradient
(:func:`transport_plan`, :class:`Sinkhorn`).

Imported only when FASTopic is built, so that torch stays optional for the rest of the package.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.nn import functional

from topicbench.core.corpus import segment_ids

#: Added inside log(θ_d · β_w) of the reconstruction (the package's constant).
DSR_EPSILON = 1e-12
#: Sinkhorn absorbs its scalings into the kernel, and checks convergence, at the steps
#: 1, 1 + this, 1 + 2 x this, ... (the package's schedule: ``cpt % 50 == 1``).
SINKHORN_CHECK_INTERVAL = 50
#: Added to each marginal inside its log (the package's constant).
SINKHORN_LOG_FLOOR = 1e-30


def squared_distances(x, y):
    """‖x_i − y_j‖² for all pairs (the package's ``pairwise_euclidean_distance``, same ops)."""
    return (x**2).sum(dim=1, keepdim=True) + (y**2).sum(dim=1) - 2 * x @ y.T


class WordCounts:
    """A document-term count matrix as the (document, word, count) entries the reconstruction
    reads: the sparsity pattern as a torch CSR tensor (for ``sampled_addmm``), and the entries
    grouped by document and by word (for the two ``embedding_bag`` products of the backward
    pass). Built once per fit."""

    def __init__(self, doc_term, device: str = "cpu"):
        matrix = sp.csr_matrix(doc_term, dtype=np.float32, copy=True)
        matrix.sum_duplicates()
        matrix.eliminate_zeros()
        matrix.sort_indices()
        self.n_documents, self.n_words = matrix.shape
        indptr = torch.from_numpy(matrix.indptr.astype(np.int64))
        self.words = torch.from_numpy(matrix.indices.astype(np.int64))
        self.counts = torch.from_numpy(matrix.data)
        self.document_offsets = indptr[:-1]
        documents = segment_ids(matrix.indptr)
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
        return SampledProduct.apply(theta, beta, self)


class SampledProduct(torch.autograd.Function):
    """The autograd function p_e = θ_{d_e} · β_{w_e} over the stored entries e of a
    :class:`WordCounts`: forward one sampled dense-dense product, backward dθ = G βᵀ and
    dβᵀ = Gᵀ θ for the sparse matrix G of the entries' gradients (``embedding_bag`` sums)."""

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


def transport_plan(cost, a, b, alpha: float, max_iterations: int, tolerance: float, stats: dict | None = None):
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
    plan = Sinkhorn.apply(
        cost, log_a, log_b, a.detach(), b.detach(), float(alpha), int(max_iterations), float(tolerance), stats
    )
    return plan


def _log_window(frame, la, lb, steps):
    lu = torch.zeros_like(la)
    us, vs = [lu], []
    for _ in range(steps):
        lv = lb - torch.logsumexp(frame + lu[:, None], dim=0)
        lu = la - torch.logsumexp(frame + lv[None, :], dim=1)
        us.append(lu)
        vs.append(lv)
    return us, vs

def _kernel_window(kernel, la, lb, steps):
    lu = torch.zeros_like(la)
    us, vs = [lu], []
    for _ in range(steps):
        lv = lb - torch.log(torch.mv(kernel.T, lu.exp()))
        lu = la - torch.log(torch.mv(kernel, lv.exp()))
        us.append(lu)
        vs.append(lv)
    finite = bool(torch.isfinite(torch.stack(us)).all()) and bool(torch.isfinite(torch.stack(vs)).all())
    return (us, vs) if finite else None

def _log_window_backward(frame, la, lb, us, vs, gu, gv):
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

def _kernel_window_backward(kernel, la, lb, us, vs, gu, gv):
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
    """The autograd function of :func:`transport_plan`.

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
            result = None if kernel is None else _kernel_window(kernel, la, lb, steps)
            mode = "kernel"
            if result is None:
                result, mode = _log_window(frame, la, lb, steps), "log"
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
                d_frame, d_la_w, d_lb_w = _kernel_window_backward(frame.exp(), la, lb, us, vs, gu, gv)
                if not bool(torch.isfinite(d_frame).all()):
                    d_frame = None
            if d_frame is None:
                d_frame, d_la_w, d_lb_w = _log_window_backward(frame, la, lb, us, vs, gu, gv)
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


class FASTopicNetwork(nn.Module):
    """FASTopic's parameters and loss as a module (build it inside a seeded block): the package's
    ``fastopic`` module after ``init(vocabulary_size, embedding_size)``, with its parameters
    drawn in the same order and its ``forward``, ``get_beta`` and ``get_theta``."""

    def __init__(
        self, num_topics: int, vocabulary_size: int, embedding_size: int, *, dt_alpha: float, tw_alpha: float,
        theta_temperature: float, sinkhorn_max_iterations: int, sinkhorn_tolerance: float,
    ):
        super().__init__()
        self.dt_alpha, self.tw_alpha, self.theta_temperature = float(dt_alpha), float(tw_alpha), float(theta_temperature)
        self.max_iterations, self.tolerance = int(sinkhorn_max_iterations), float(sinkhorn_tolerance)
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
        cost = squared_distances(x, y)
        a = (torch.ones(cost.shape[0], dtype=cost.dtype, device=cost.device) / cost.shape[0]).unsqueeze(1)
        stats = {}
        plan = transport_plan(cost, a, b, alpha, self.max_iterations, self.tolerance, stats)
        self.sinkhorn[name] = stats
        return plan, (plan * cost).sum()

    def _topic_word_plan(self):
        b = functional.softmax(self.word_weights, dim=0)
        return self._plan("TW", self.topic_embeddings, self.word_embeddings, b, self.tw_alpha)

    def get_beta(self):
        """β = K · π_TW (K x V), the package's ``get_beta``."""
        plan, _ = self._topic_word_plan()
        return plan * plan.shape[0]

    def get_theta(self, document_vectors, train_document_vectors):
        """The package's ``get_theta``: exp(−‖e_d − t_k‖² / τ) over its sum over the training
        documents, normalised per document."""
        temperature = self.theta_temperature
        topics = self.topic_embeddings.detach()
        weights = torch.exp(-squared_distances(document_vectors, topics) / temperature)
        train_weights = torch.exp(-squared_distances(train_document_vectors, topics) / temperature)
        theta = weights / train_weights.sum(0)
        return theta / theta.sum(1, keepdim=True)

    def loss(self, document_vectors, counts: WordCounts):
        """The package's ``forward(train_bow, doc_embeddings)["loss"]`` on the full batch."""
        b = functional.softmax(self.topic_weights, dim=0)
        plan_dt, cost_dt = self._plan("DT", document_vectors, self.topic_embeddings, b, self.dt_alpha)
        plan_tw, cost_tw = self._topic_word_plan()
        theta = plan_dt * plan_dt.shape[0]
        beta = plan_tw * plan_tw.shape[0]
        # −(1/D) Σ_d Σ_w x_dw log(θ_d · β_w + ε), over the non-zero counts only
        products = counts.products(theta, beta)
        dsr = -(counts.counts * (products + DSR_EPSILON).log()).sum() / counts.n_documents
        return dsr + (cost_dt + cost_tw)
