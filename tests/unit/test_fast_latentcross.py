"""Fast LatentCross: what only it has (the shared checks against the reference formulation are in
``test_fast_jodie_latentcross.py``)."""

from __future__ import annotations

import torch


def test_input_gates_give_autograds_gradients_bit_for_bit():
    """``ItemColumnGates`` writes the gradient of W_ih itself: every gradient equals autograd's through
    the gather, the slice and the bias sum, bit for bit (duplicate items in the batch included)."""
    from torch.nn import functional as F

    from recunlearn.models.sequential.latentcross import LatentCrossNet

    def autograd_gates(net, item, context):
        w1, b1 = net.pre.weight, net.pre.bias
        scale = 1 + ((w1.index_select(0, item) * context).sum(1) + b1.index_select(0, item))[:, None]
        tail = context * (1 + F.linear(context, w1[-2:], b1[-2:]))
        w = net.cell.weight_ih
        return w.t().index_select(0, item) * scale + F.linear(tail, w[:, -2:], net.cell.bias_ih + net.cell.bias_hh)

    torch.manual_seed(3)
    net = LatentCrossNet(n_items=50, hidden=8)
    item = torch.randint(0, 51, (200,))  # 0..|I|: the extra class too, and many repeats
    assert len(item.unique()) < len(item)
    context = torch.randn(200, 2)
    upstream = torch.randn(200, 32)
    results = []
    for gates in (net.input_gates, lambda i, c: autograd_gates(net, i, c)):
        net.zero_grad(set_to_none=True)
        out = gates(item, context)
        (out * upstream).sum().backward()
        results.append((out.detach().clone(), {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}))
    (out_fast, grads_fast), (out_ref, grads_ref) = results
    assert torch.equal(out_fast, out_ref)
    assert grads_fast.keys() == grads_ref.keys() and {"cell.weight_ih", "pre.weight", "cell.bias_ih"} <= grads_ref.keys()
    for name in grads_ref:
        assert torch.equal(grads_fast[name], grads_ref[name]), name
