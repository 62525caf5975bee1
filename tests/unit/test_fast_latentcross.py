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


def test_the_gru_recurrence_gives_autograds_gradients_through_a_grucell():
    """``GRURecurrence`` (the GRU cell's t-batch loop with its backward written out) against PyTorch's
    GRUCell under autograd, t-batch by t-batch: the states before each row, the final states, and the
    gradients of the input gates, W_hh, b_hh and the initial states (users in several t-batches) of a loss
    on the states before each row."""
    from torch.nn import functional as F

    from recunlearn.models.sequential.latentcross import GRURecurrence

    torch.manual_seed(5)
    cell = torch.nn.GRUCell(6, 8).double()
    small = F.normalize(torch.randn(5, 8, dtype=torch.float64), dim=1).requires_grad_()
    slots = [torch.tensor([0, 2, 4]), torch.tensor([2, 1]), torch.tensor([2, 0, 3])]
    sizes = [len(s) for s in slots]
    x = torch.randn(sum(sizes), 6, dtype=torch.float64)
    gates = F.linear(x, cell.weight_ih, cell.bias_ih).detach().requires_grad_()
    upstream = torch.randn(sum(sizes), 8, dtype=torch.float64)

    def reference():
        states, before = small, []
        for sl, xs in zip(slots, x.split(sizes)):
            s = states[sl]
            before.append(s)
            gh = F.linear(s, cell.weight_hh, cell.bias_hh)
            gi = gates[sum(sizes[:len(before) - 1]):][:len(sl)]
            r, z = torch.sigmoid(gi[:, :16] + gh[:, :16]).chunk(2, 1)
            n = torch.tanh(gi[:, 16:] + r * gh[:, 16:])
            states = states.index_copy(0, sl, F.normalize((1 - z) * n + z * s, dim=1))
        return torch.cat(before), states

    results = []
    for run in (lambda: GRURecurrence.apply(small, gates, cell.weight_hh, cell.bias_hh, slots, sizes), reference):
        for t in (small, gates, cell.weight_hh, cell.bias_hh):
            t.grad = None
        before, final = run()
        (before * upstream).sum().backward()  # the final states leave the window detached (not differentiable)
        results.append((before.detach(), final.detach(),
                        [t.grad.clone() for t in (small, gates, cell.weight_hh, cell.bias_hh)]))
    (before_a, final_a, grads_a), (before_b, final_b, grads_b) = results
    torch.testing.assert_close(before_a, before_b)
    torch.testing.assert_close(final_a, final_b)
    for a, b in zip(grads_a, grads_b):
        torch.testing.assert_close(a, b)
    # the GRU cell of the reference step is PyTorch's: one step agrees with nn.GRUCell itself
    s = small.detach()[:3]
    step = F.linear(x[:3], cell.weight_ih, cell.bias_ih)
    gh = F.linear(s, cell.weight_hh, cell.bias_hh)
    r, z = torch.sigmoid(step[:, :16] + gh[:, :16]).chunk(2, 1)
    n = torch.tanh(step[:, 16:] + r * gh[:, 16:])
    torch.testing.assert_close((1 - z) * n + z * s, cell(x[:3], s))


def test_a_cell_that_does_not_exist_is_refused():
    import pytest

    from recunlearn.models.sequential import LatentCrossRecommender

    with pytest.raises(ValueError, match="cell must be one of \\('lstm', 'gru'\\), got 'rnn'"):
        LatentCrossRecommender(10, cell="rnn")
