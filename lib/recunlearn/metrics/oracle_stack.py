"""Several MIO oracles trained as one network with a leading seed dimension.

The membership-inference oracle (:mod:`.membership`) is a tiny MLP trained for thousands of
mini-batch steps; one step costs far more in per-operation overhead than in arithmetic. An
:class:`OracleStack` holds ``S`` such networks (one per seed, same shapes) with layer ``l``'s weights
stacked as ``(S, out, in)`` and its biases as ``(S, out)``, all in one flat buffer, and trains them
together: every step is one batched forward, one hand-written backward and one optimiser update of
the flat buffer, whatever ``S``.

**Same numbers as one network at a time.** Each seed keeps its own initialisation, its own batch
order (a ``torch.randperm`` per epoch from a generator seeded like the reference's) and its own loss
(the mean over *its* batch; the stacked loss is the sum of the seeds' losses, so no gradient mixes
seeds). The backward uses the very kernels autograd runs for ``nn.Linear`` / ``nn.ReLU`` /
``nn.CrossEntropyLoss`` (weight gradient ``grad^T @ input``, input gradient ``grad @ W``, bias
gradient ``grad.sum``, ``threshold_backward``, ``_log_softmax_backward_data``) and the optimiser
applies the same element-wise operations as ``torch.optim.Adam`` / ``SGD`` (single-tensor form). On
a CPU this gives the bits of :func:`~recunlearn.metrics.membership.train_oracle` run seed by seed
(checked by ``tests/unit/test_oracle_stack.py`` and ``benchmarks/bench_mio.py``); the reference
stays in :mod:`.membership` as the definition.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class OracleStack:
    """``S`` MLPs ``in → hidden... → 2`` with ReLU, trained together (see the module docstring).

    ``networks`` are the initialised reference networks (``nn.Sequential`` of ``nn.Linear`` and
    ``nn.ReLU``, one per seed, same shapes); their weights are copied, the networks are not changed.
    """

    def __init__(self, networks: list[nn.Sequential], device="cpu"):
        linears = [[m for m in net if isinstance(m, nn.Linear)] for net in networks]
        shapes = [tuple(layer.weight.shape) for layer in linears[0]]
        if any([tuple(layer.weight.shape) for layer in net] != shapes for net in linears):
            raise ValueError("all networks of a stack must have the same layer shapes")
        self.n_networks, self.shapes = len(networks), shapes
        sizes = [n for out, inp in shapes for n in (self.n_networks * out * inp, self.n_networks * out)]
        self.flat = torch.empty(sum(sizes), device=device)
        self.grad = torch.zeros_like(self.flat)
        self.weights, self.biases = self._views(self.flat)
        self.weight_grads, self.bias_grads = self._views(self.grad)
        with torch.no_grad():
            for layer, (weight, bias) in enumerate(zip(self.weights, self.biases)):
                weight.copy_(torch.stack([net[layer].weight for net in linears]))
                bias.copy_(torch.stack([net[layer].bias for net in linears]))

    def _views(self, buffer: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        weights, biases, start = [], [], 0
        for out, inp in self.shapes:
            for shape, target in (((self.n_networks, out, inp), weights), ((self.n_networks, out), biases)):
                size = int(np.prod(shape))
                target.append(buffer[start:start + size].view(shape))
                start += size
        return weights, biases

    # --- forward and backward ----------------------------------------------------------------------------

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits ``(S, B, 2)`` of inputs ``x`` ``(S, B, in)`` (row ``s`` through network ``s``) and the
        layer inputs (``x`` and the hidden ReLU outputs) the backward needs."""
        inputs, h = [], x
        last = len(self.shapes) - 1
        for layer, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            inputs.append(h)
            h = _linear(h, weight, bias)
            if layer < last:
                h = torch.relu(h)
        return h, inputs

    def backward(self, grad: torch.Tensor, inputs: list[torch.Tensor]) -> None:
        """Gradients of the parameters into :attr:`grad` from ``grad`` = d loss / d logits."""
        for layer in range(len(self.shapes) - 1, -1, -1):
            _matmul(grad.transpose(1, 2), inputs[layer], out=self.weight_grads[layer])
            torch.sum(grad, 1, out=self.bias_grads[layer])
            if layer:
                grad_input = _matmul(grad, self.weights[layer], out=torch.empty_like(inputs[layer]))
                grad = torch.ops.aten.threshold_backward(grad_input, inputs[layer], 0)

    @staticmethod
    def cross_entropy_grad(logits: torch.Tensor, label_weights: torch.Tensor) -> torch.Tensor:
        """d loss / d logits of ``sum_s mean_b CE(logits[s, b], labels[s, b])``, where ``label_weights``
        is ``-1 / B`` at each sample's label and 0 elsewhere (what ``nll_loss``'s backward writes)."""
        log_probs = torch.log_softmax(logits, 2)
        return torch._log_softmax_backward_data(label_weights, log_probs, 2, logits.dtype)

    @torch.no_grad()
    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Member probability (softmax column 1) ``(S, M)`` of inputs ``(S, M, in)``."""
        return torch.softmax(self.forward(x)[0], 2)[:, :, 1]

    def network(self, index: int) -> nn.Sequential:
        """Network ``index`` as an ``nn.Sequential`` (a copy of its parameters)."""
        layers = []
        for layer, (out, inp) in enumerate(self.shapes):
            linear = nn.Linear(inp, out)
            with torch.no_grad():
                linear.weight.copy_(self.weights[layer][index])
                linear.bias.copy_(self.biases[layer][index])
            layers += [linear, nn.ReLU()] if layer < len(self.shapes) - 1 else [linear]
        return nn.Sequential(*layers).to(self.flat.device)

    # --- training -----------------------------------------------------------------------------------------

    def fit(self, features: torch.Tensor, labels: torch.Tensor, seeds, optimizer: str = "adam", lr: float = 1e-3,
            momentum: float = 0.0, epochs: int = 100, batch_size: int = 32) -> "OracleStack":
        """Train on ``features`` ``(S, N, in)`` and ``labels`` ``(S, N)`` (network ``s`` on row ``s``) with
        cross-entropy, ``epochs`` epochs of mini-batches of ``batch_size`` in the order of a
        ``torch.randperm`` per epoch from ``torch.Generator().manual_seed(seeds[s])``."""
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer = {optimizer!r}: allowed {sorted(OPTIMIZERS)}")
        n = features.shape[1]
        step = OPTIMIZERS[optimizer](self.flat, self.grad, lr, momentum)
        generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]
        flat_features, flat_labels = features.reshape(-1, features.shape[2]), labels.reshape(-1)
        offsets = torch.arange(self.n_networks).unsqueeze(1) * n
        # -1/B at the label of every sample, B the size of the sample's batch (the last one may be short)
        batch_sizes = torch.full((n,), float(batch_size))
        if n % batch_size:
            batch_sizes[n - n % batch_size:] = float(n % batch_size)
        scale = (-1.0 / batch_sizes).to(features.device)
        for _ in range(epochs):
            order = (torch.stack([torch.randperm(n, generator=g) for g in generators]) + offsets).flatten()
            order = order.to(features.device)
            x = flat_features.index_select(0, order).view(features.shape)
            y = flat_labels.index_select(0, order).view(labels.shape)
            label_weights = torch.zeros(*y.shape, 2, device=features.device).scatter_(
                2, y.unsqueeze(2), scale.expand_as(y).unsqueeze(2))
            for start in range(0, n, batch_size):
                batch = slice(start, start + batch_size)
                logits, inputs = self.forward(x[:, batch])
                self.backward(self.cross_entropy_grad(logits, label_weights[:, batch]), inputs)
                step()
        return self


SMALL_PRODUCT = 400
"""torch's CPU ``bmm`` / ``baddbmm`` compute a product with fewer than this many multiply-adds per
matrix (rows x columns x contraction) by a loop of their own instead of BLAS, which rounds
differently from the BLAS kernel ``nn.Linear`` uses: such products are computed network by
network with the 2-D kernels (for the oracle: the 4 -> 2 layer and a short last batch)."""


def _small(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device.type == "cpu" and a.shape[1] * a.shape[2] * b.shape[2] < SMALL_PRODUCT


def _matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out[s] = a[s] @ b[s]`` with the kernel of a 2-D product."""
    if _small(a, b):
        for index in range(len(a)):
            torch.mm(a[index], b[index], out=out[index])
        return out
    return torch.bmm(a, b, out=out)


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``x[s] @ weight[s]^T + bias[s]`` with the kernel of ``nn.Linear`` (``addmm``)."""
    transposed = weight.transpose(1, 2)
    if _small(x, transposed):
        return torch.stack([torch.addmm(bias[index], x[index], transposed[index]) for index in range(len(x))])
    return torch.baddbmm(bias.unsqueeze(1), x, transposed)


class _Adam:
    """``torch.optim.Adam`` (no weight decay, no amsgrad), single-tensor form, on one flat buffer."""

    def __init__(self, params, grad, lr, momentum, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.grad, self.lr, (self.beta1, self.beta2), self.eps = params, grad, lr, betas, eps
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(params), torch.zeros_like(params)
        self.denom = torch.empty_like(params)
        self.step = 0

    def __call__(self):
        self.step += 1
        self.exp_avg.lerp_(self.grad, 1 - self.beta1)
        self.exp_avg_sq.mul_(self.beta2).addcmul_(self.grad, self.grad, value=1 - self.beta2)
        step = float(self.step)
        step_size = self.lr / (1 - self.beta1 ** step)
        bias_correction2_sqrt = (1 - self.beta2 ** step) ** 0.5
        torch.sqrt(self.exp_avg_sq, out=self.denom).div_(bias_correction2_sqrt).add_(self.eps)
        self.params.addcdiv_(self.exp_avg, self.denom, value=-step_size)


class _Sgd:
    """``torch.optim.SGD`` (no weight decay, dampening or Nesterov), single-tensor form, on one flat buffer."""

    def __init__(self, params, grad, lr, momentum):
        self.params, self.grad, self.lr, self.momentum = params, grad, lr, momentum
        self.buffer = None

    def __call__(self):
        direction = self.grad
        if self.momentum:
            if self.buffer is None:
                self.buffer = self.grad.clone()
            else:
                self.buffer.mul_(self.momentum).add_(self.grad)
            direction = self.buffer
        self.params.add_(direction, alpha=-self.lr)


OPTIMIZERS = {"adam": _Adam, "sgd": _Sgd}
"""The optimisers :meth:`OracleStack.fit` steps all networks with, by name."""
