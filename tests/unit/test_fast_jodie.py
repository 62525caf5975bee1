"""Fast JODIE: what only it has (the shared checks against the reference formulation are in
``test_fast_jodie_latentcross.py``)."""

from __future__ import annotations

import pytest
import torch

from recunlearn.models.sequential import JODIERecommender


@pytest.fixture
def stream(wikipedia_head):
    return wikipedia_head


def test_recycled_gradient_and_transposed_adam_change_no_bit(stream):
    """The fast path stores the prediction weight column by column, reuses its gradient buffer from
    window to window and gives fused Adam the weight's contiguous transpose: one epoch gives the same
    weights and test scores, bit for bit, as a fresh zero gradient every window and Adam on the
    parameter itself."""
    from recunlearn.models.sequential import jodie

    recycled = []

    def train(shortcuts):
        model = JODIERecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=1)
        if shortcuts:
            recycle = model._recycled.recycle

            def counted(weight):
                recycle(weight)
                recycled.append(model._recycled._buffer is not None)
            model._recycled.recycle = counted
        else:
            model._recycled.recycle = lambda weight: None
            model._optimizer = lambda net: jodie.adam(net, model.lr, model.weight_decay, "fast")
        model.fit(stream)
        in_training = list(recycled)
        scores = torch.cat([s for _, _, s in model.test_scores(stream)])
        recycled[:] = in_training  # the test pass trains a copy of the net: its first window starts afresh
        return {k: v.clone() for k, v in model.net.state_dict().items()}, scores, model

    (fast, fast_scores, model), (plain, plain_scores, _) = train(True), train(False)
    weight = model.net.predict.weight
    assert weight.stride() == (1, weight.shape[0])  # column by column
    assert recycled[0] is False and all(recycled[1:]) and len(recycled) > 1  # every window after the first reuses it
    assert fast.keys() == plain.keys() and all(torch.equal(fast[k], plain[k]) for k in fast)
    assert torch.equal(fast_scores, plain_scores)
