"""SRU session models: the contract, invariants, BERT4Rec's cloze masking, metrics with known answers,
the trainer (learning, early stopping, determinism) and parameter errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from recunlearn.data.sessions import SessionData, Sessions, prefix_pairs
from recunlearn.metrics.ranking import ndcg_at_k
from recunlearn.models.session import (SESSION_MODELS, BERT4Rec, SessionModel, UnknownModelError, candidate_ranks,
                                       cloze_mask, evaluate_session_model, hidden_states, last_windows,
                                       make_session_model, metrics_from_ranks, ndcg_at_k_from_ranks,
                                       prefix_hidden_centroid, recall_at_k_from_ranks, session_hidden_states,
                                       target_ranks, train_session_model)
from recunlearn.models.session import training as training_module

N_ITEMS, MAXLEN = 30, 6
NAMES = ("gru4rec", "sasrec", "bert4rec")


def build(name, seed=0, n_items=N_ITEMS, maxlen=MAXLEN, **hyper):
    return SESSION_MODELS[name](n_items, maxlen, generator=torch.Generator().manual_seed(seed), **hyper)


def random_windows(n, n_items=N_ITEMS, maxlen=MAXLEN, seed=0, min_len=1):
    """Left-padded windows with 1..maxlen real items."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, maxlen), dtype=np.int64)
    lengths = rng.integers(min_len, maxlen + 1, n)
    for row, length in enumerate(lengths):
        out[row, maxlen - length:] = rng.integers(1, n_items + 1, length)
    return torch.as_tensor(out)


def cycle_data(n_items=12, maxlen=4, n_sessions=150, length=6, seed=0):
    """Sessions that walk the cycle 1 -> 2 -> ... -> n_items -> 1 from a random start."""
    starts = np.random.default_rng(seed).integers(0, n_items, n_sessions)
    sequences = [[(s + j) % n_items + 1 for j in range(length)] for s in starts]
    return SessionData.from_sessions("cycle", Sessions.from_lists(sequences), n_items, maxlen, seed=0)


# --- the contract -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_contract_shapes_and_output_layer(name):
    model = build(name).eval()
    windows = random_windows(7)
    with torch.no_grad():
        h, s = model.hidden(windows), model.scores(windows)
    assert h.shape == (7, 64) and s.shape == (7, N_ITEMS + 1)
    assert model.item_embeddings().shape == (N_ITEMS + 1, 64)
    assert isinstance(model, SessionModel) and model.name == name
    assert torch.equal(s, model.output(h)) and torch.equal(model(windows), s)
    assert torch.equal(model.item_embeddings()[0], torch.zeros(64))  # padding row
    loss = model.train().training_loss(windows, torch.randint(1, N_ITEMS + 1, (7,)), torch.Generator())
    assert loss.dim() == 0 and torch.isfinite(loss)
    with pytest.raises(ValueError, match="shape"):
        model.hidden(torch.zeros(2, MAXLEN + 1, dtype=torch.long))


def test_bert4rec_vocabulary_and_item_table():
    model = build("bert4rec")
    assert model.token_emb.weight.shape == (N_ITEMS + 2, 64) and model.mask_token == N_ITEMS + 1
    assert torch.equal(model.item_embeddings(), model.token_emb.weight[:-1])
    tokens = model.prediction_tokens(torch.tensor([[0, 0, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]]))
    assert tokens.tolist() == [[0, 3, 4, 5, 6, N_ITEMS + 1], [2, 3, 4, 5, 6, N_ITEMS + 1]]


@pytest.mark.parametrize("name", NAMES)
def test_rows_are_independent_and_eval_is_deterministic(name):
    model = build(name).eval()
    windows = random_windows(9)
    with torch.no_grad():
        batch = model.hidden(windows)
        alone = torch.cat([model.hidden(windows[i:i + 1]) for i in range(9)])
        again = model.hidden(windows)
    assert torch.allclose(batch, alone, atol=1e-5, rtol=0)
    assert torch.equal(batch, again)


def test_dropout_only_in_train_mode():
    model = build("sasrec").train()
    windows = random_windows(5)
    assert not torch.equal(model.hidden(windows), model.hidden(windows))
    model.eval()
    assert torch.equal(model.hidden(windows), model.hidden(windows))


# --- padding invariants -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sasrec", "bert4rec"])
def test_padding_embeddings_do_not_reach_the_output(name):
    """SASRec zeroes padded inputs before the first block; BERT4Rec masks padded keys: neither the padding
    row of the item table nor the positional embeddings of padded positions change a state."""
    model = build(name).eval()
    windows = random_windows(20, min_len=1)
    windows[:, :2] = 0  # the first two positions are padding in every window
    with torch.no_grad():
        before = model.hidden(windows)
        table = model.item_emb if name == "sasrec" else model.token_emb
        table.weight[0] = torch.randn(64)
        model.pos_emb.weight[0] = torch.randn(64)
        if name == "sasrec":
            model.pos_emb.weight[1] = torch.randn(64)  # BERT4Rec's shift moves column 1 to position 0
        after = model.hidden(windows)
    assert torch.allclose(before, after, atol=1e-6, rtol=0)


def test_padding_count_matters_for_causal_models_but_not_the_shifted_out_item_for_bert4rec():
    """GRU4Rec and SASRec read every column (padding steps move the GRU state, padded keys are attended);
    BERT4Rec's prediction drops the oldest column when it appends [mask]."""
    a = torch.tensor([[0, 0, 0, 3, 4, 5]])
    b = torch.tensor([[9, 0, 0, 3, 4, 5]])
    c = torch.tensor([[0, 0, 7, 3, 4, 5]])
    with torch.no_grad():
        for name in ("gru4rec", "sasrec"):
            model = build(name).eval()
            assert not torch.allclose(model.hidden(a), model.hidden(b))
        bert = build("bert4rec").eval()
        assert torch.equal(bert.hidden(a), bert.hidden(b))
        assert not torch.allclose(bert.hidden(a), bert.hidden(c))


@pytest.mark.parametrize("name", NAMES)
def test_padding_row_stays_zero_through_training(name):
    model = build(name)
    data = cycle_data(n_items=N_ITEMS, maxlen=MAXLEN, n_sessions=40)
    train_session_model(model, data, torch.Generator().manual_seed(0), max_epochs=1)
    assert torch.equal(model.item_embeddings()[0], torch.zeros(64))


# --- BERT4Rec cloze masking -----------------------------------------------------------------------------

def test_cloze_mask_fractions_and_labels():
    windows = random_windows(6000, n_items=50, maxlen=20, seed=1)
    tokens, labels = cloze_mask(windows, 50, 0.3, torch.Generator().manual_seed(0))
    real = windows != 0
    chosen = labels != 0
    assert not (chosen & ~real).any()  # padding is never chosen ...
    assert torch.equal(tokens[~real], windows[~real])  # ... nor changed
    assert torch.equal(tokens[~chosen], windows[~chosen])  # unchosen positions keep their item
    assert torch.equal(labels[chosen], windows[chosen])  # labels: the original item, only where chosen
    fraction = chosen.sum().item() / real.sum().item()
    assert abs(fraction - 0.3) < 0.01
    masked = (tokens[chosen] == 51).double().mean().item()
    kept = (tokens[chosen] == windows[chosen]).double().mean().item()
    assert abs(masked - 0.8) < 0.01
    assert abs(kept - (0.1 + 0.1 / 50)) < 0.01  # a random replacement can draw the item itself
    replaced = tokens[chosen & (tokens != 51)]
    assert replaced.min() >= 1 and replaced.max() <= 50


def test_bert4rec_loss_uses_only_masked_positions():
    model = build("bert4rec").eval()
    windows = random_windows(16)
    generator = torch.Generator().manual_seed(3)
    loss = model.training_loss(windows, torch.zeros(16, dtype=torch.long), generator)
    tokens, labels = cloze_mask(windows, N_ITEMS, 0.3, torch.Generator().manual_seed(3))
    chosen = labels != 0
    expected = torch.nn.functional.cross_entropy(model.output(model.sequence_states(tokens)[chosen]), labels[chosen])
    assert torch.allclose(loss, expected)
    # the targets argument is not used
    other = model.training_loss(windows, torch.ones(16, dtype=torch.long), torch.Generator().manual_seed(3))
    assert torch.equal(loss, other)


# --- metrics --------------------------------------------------------------------------------------------

def test_target_ranks_known_answers_and_pessimistic_ties():
    scores = torch.tensor([
        [9.0, 5.0, 1.0, 2.0, 0.0],  # target 1 ranked first (the padding column's 9 is ignored)
        [0.0, 3.0, 2.0, 1.0, 4.0],  # target 2 ranked third
        [0.0, 1.0, 1.0, 1.0, 0.5],  # target 2 tied with two others: rank 2 (ties against the target)
        [0.0, 1.0, 2.0, 3.0, 4.0],  # target 1 ranked last
    ])
    ranks = target_ranks(scores, torch.tensor([1, 2, 2, 1]))
    assert ranks.tolist() == [0, 2, 2, 3]
    assert target_ranks(scores, torch.tensor([1, 2, 2, 1]), exclude_padding=False).tolist() == [1, 2, 2, 3]
    assert target_ranks(torch.tensor([[0.0, float("nan"), 1.0]]), torch.tensor([1])).tolist() == [3]
    assert target_ranks(torch.tensor([[5.0, 1.0, 7.0]]), torch.tensor([0])).tolist() == [3]  # padding: a miss
    copy = scores.clone()
    target_ranks(scores, torch.tensor([1, 2, 2, 1]))
    assert torch.equal(scores, copy)
    ndcg = ndcg_at_k_from_ranks(np.array([0, 2, 12]), 10)
    assert ndcg[0] == 1.0 and ndcg[1] == pytest.approx(1 / math.log2(4)) and ndcg[2] == 0.0
    assert recall_at_k_from_ranks(np.array([0, 2, 9, 10]), 10).tolist() == [1, 1, 1, 0]
    values = metrics_from_ranks(np.array([0, 2, 12]), ks=(10,))
    assert values["ndcg@10"] == pytest.approx((1 + 0.5) / 3) and values["recall@10"] == pytest.approx(2 / 3)
    assert metrics_from_ranks(np.array([], dtype=np.int64))["ndcg@10"] is None


def test_ranks_agree_with_topk_and_the_library_ndcg():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(300, 41, generator=generator)  # continuous: no ties
    targets = torch.randint(1, 41, (300,), generator=generator)
    ranks = target_ranks(scores, targets).numpy()
    masked = scores.clone()
    masked[:, 0] = -np.inf
    for k in (1, 5, 10, 20):
        hits = torch.topk(masked, k, dim=1).indices == targets[:, None]
        assert np.allclose(ndcg_at_k(hits, torch.ones(300)).numpy(), ndcg_at_k_from_ranks(ranks, k))
        assert np.array_equal(hits.any(1).numpy(), recall_at_k_from_ranks(ranks, k).astype(bool))


class FixedScores(SessionModel):
    """Scores read from a table indexed by the window's last item (for metric tests)."""

    name = "fixed"
    DEFAULTS = {"hidden_size": 1}

    def __init__(self, table):
        super().__init__(table.shape[1] - 1, 2, {}, "reference")  # scores = hidden: no Linear output layer
        self.output = torch.nn.Identity()
        self.register_buffer("table", table)
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def hidden(self, windows):
        return self.table[windows[:, -1]]


def test_evaluate_is_a_mean_over_pairs_whatever_the_batch_size():
    table = torch.zeros(5, 6)
    table[1] = torch.tensor([0.0, 1.0, 5.0, 4.0, 3.0, 2.0])  # from item 1: ranking 2, 3, 4, 5, 1
    windows = np.array([[0, 1]] * 5)
    targets = np.array([2, 3, 4, 5, 1])  # ranks 0..4
    model = FixedScores(table)
    expected = {"recall@2": 2 / 5, "ndcg@2": (1 + 1 / math.log2(3)) / 5,
                "recall@5": 1.0, "ndcg@5": sum(1 / math.log2(r + 2) for r in range(5)) / 5}
    for batch_size in (1, 2, 2048):
        values = evaluate_session_model(model, (windows, targets), ks=(2, 5), batch_size=batch_size)
        assert values["n_pairs"] == 5
        for key, value in expected.items():
            assert values[key] == pytest.approx(value)


def test_candidate_ranks_rank_the_first_candidate_among_its_row():
    table = torch.zeros(5, 6)
    table[1] = torch.tensor([9.0, 1.0, 5.0, 4.0, 3.0, 4.0])
    model = FixedScores(table)
    windows = np.array([[0, 1]] * 3)
    candidates = np.array([[2, 3, 4], [4, 2, 1], [3, 5, 1]])  # first ranked 1st, 2nd, tied with 5 (-> 2nd)
    assert candidate_ranks(model, windows, candidates, batch_size=2).tolist() == [0, 1, 1]


# --- windows and hidden states ----------------------------------------------------------------------

def test_last_windows_and_session_hidden_states():
    sequences = [[1, 2, 3, 4, 5, 6, 7, 8], [4, 5], [], [9]]
    windows = last_windows(sequences, 4)
    assert windows.tolist() == [[5, 6, 7, 8], [0, 0, 4, 5], [0, 0, 0, 0], [0, 0, 0, 9]]
    assert np.array_equal(last_windows(Sessions.from_lists(sequences), 4), windows)
    for name in NAMES:
        model = build(name, maxlen=4).train()
        states = session_hidden_states(model, Sessions.from_lists(sequences), batch_size=3)
        assert model.training  # mode restored
        model.eval()
        with torch.no_grad():
            assert torch.allclose(states, model.hidden(torch.as_tensor(windows)), atol=1e-6, rtol=0)
        assert hidden_states(model, windows[:0]).shape == (0, 64)
        prefixes, _ = prefix_pairs(sequences, 4)
        with torch.no_grad():
            centroid = model.hidden(torch.as_tensor(prefixes)).mean(0)
        assert torch.allclose(prefix_hidden_centroid(model, sequences, batch_size=4), centroid, atol=1e-6, rtol=0)
        assert torch.equal(prefix_hidden_centroid(model, [[3]]), torch.zeros(64))


# --- training -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["gru4rec", "sasrec"])
def test_trainer_learns_the_cycle(name):
    data = cycle_data()
    model = build(name, n_items=12, maxlen=4)
    result = train_session_model(model, data, torch.Generator().manual_seed(0), lr=1e-2, max_epochs=12,
                                 validate_every=3)
    test = evaluate_session_model(model, data.pairs("test"), ks=(1,))
    assert test["recall@1"] > 0.9, result["curve"]  # SASRec's dropout 0.5 leaves it at ~0.95-1 (seeds 0-5)
    assert result["best_valid"] == max(e["valid_ndcg@10"] for e in result["curve"] if "valid_ndcg@10" in e)
    assert [e["epoch"] for e in result["curve"] if "valid_ndcg@10" in e] == [3, 6, 9, 12]
    assert result["n_train_pairs"] == data.train.n_pairs() and not model.training


def test_bert4rec_learns_the_cycle():
    data = cycle_data()
    model = build("bert4rec", n_items=12, maxlen=4)
    train_session_model(model, data, torch.Generator().manual_seed(0), lr=1e-2, max_epochs=8, validate_every=4)
    assert evaluate_session_model(model, data.pairs("test"), ks=(3,))["recall@3"] > 0.9


def test_early_stopping_restores_the_best_validated_weights(monkeypatch):
    data = cycle_data()
    model = build("gru4rec", n_items=12, maxlen=4)
    script = iter([0.1, 0.3, 0.2, 0.25, 0.2, 0.9])
    snapshots = []

    def scripted(model, pairs, ks, batch_size):
        snapshots.append({k: v.clone() for k, v in model.state_dict().items()})
        value = next(script)
        return {"n_pairs": len(pairs[1]), **{f"{m}@{k}": value for k in ks for m in ("recall", "ndcg")}}

    monkeypatch.setattr(training_module, "evaluate_session_model", scripted)
    result = train_session_model(model, data, max_epochs=20, validate_every=1, patience=3)
    assert result["best_epoch"] == 2 and result["best_valid"] == 0.3
    assert result["epochs_run"] == 5 and result["stopped_early"] and len(result["curve"]) == 5
    for key, value in model.state_dict().items():
        assert torch.equal(value, snapshots[1][key])


def test_without_validation_pairs_the_last_epoch_is_kept():
    data = cycle_data()
    model = build("gru4rec", n_items=12, maxlen=4)
    empty = (np.zeros((0, 4), dtype=np.int64), np.zeros(0, dtype=np.int64))
    result = train_session_model(model, data, max_epochs=2, valid_pairs=empty)
    assert result["best_epoch"] == 2 and result["best_valid"] is None and result["epochs_run"] == 2


def test_training_on_a_shard_uses_only_its_pairs():
    data = cycle_data()
    shard = data.train.take(np.arange(10))
    result = train_session_model(build("gru4rec", n_items=12, maxlen=4), data, sessions=shard, max_epochs=1)
    assert result["n_train_pairs"] == len(prefix_pairs(shard, 4)[1]) == 50


# --- determinism ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
def test_same_generator_same_initial_weights_and_global_rng_untouched(name):
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = build(name, seed=5), build(name, seed=5), build(name, seed=6)
    assert torch.equal(torch.rand(1), expected_next)
    for (key, x), y, z in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert torch.equal(x, y), key
    assert not torch.equal(a.output.weight, c.output.weight)


@pytest.mark.parametrize("name", ["sasrec", "bert4rec"])
def test_training_is_bit_identical_for_the_same_seeds(name):
    data = cycle_data(n_sessions=60)

    def run(seed):
        model = build(name, n_items=12, maxlen=4)
        result = train_session_model(model, data, torch.Generator().manual_seed(seed), max_epochs=2,
                                     validate_every=1)
        curve = [{k: v for k, v in e.items() if "seconds" not in k} for e in result["curve"]]
        return model.state_dict(), curve, evaluate_session_model(model, data.pairs("test"))

    (w1, c1, m1), (w2, c2, m2), (w3, _, _) = run(0), run(0), run(1)
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    assert c1 == c2 and m1 == m2
    assert not all(torch.equal(w1[k], w3[k]) for k in w1)


# --- errors -----------------------------------------------------------------------------------------------

def test_unknown_model_name():
    with pytest.raises(ValueError, match="'lstm'.*gru4rec, sasrec, bert4rec"):
        SESSION_MODELS["lstm"]
    with pytest.raises(KeyError):
        SESSION_MODELS["lstm"]
    with pytest.raises(UnknownModelError):
        make_session_model("GRU4Rec", 10, 5)
    assert make_session_model("sasrec", 10, 5).name == "sasrec"


@pytest.mark.parametrize("name, hyper, pattern", [
    ("gru4rec", {"dropout": 0.1}, "'dropout' for gru4rec; allowed: hidden_size, embedding_size"),
    ("sasrec", {"lr": 0.1}, "'lr' for sasrec; allowed: hidden_size, n_blocks, n_heads, dropout"),
    ("bert4rec", {"mask": 0.2}, "'mask' for bert4rec; allowed: .*mask_prob"),
    ("gru4rec", {"hidden_size": 0}, "hidden_size must be a positive integer, got 0"),
    ("sasrec", {"n_blocks": 1.5}, "n_blocks must be a positive integer"),
    ("sasrec", {"dropout": 1.0}, r"dropout must be a number in \[0, 1\), got 1.0"),
    ("sasrec", {"n_heads": 3}, "n_heads must divide hidden_size=64, got 3"),
    ("bert4rec", {"mask_prob": 0.0}, r"mask_prob must be a number in \(0, 1\]"),
    ("bert4rec", {"block_dropout": -0.1}, "block_dropout must be"),
])
def test_bad_hyper_parameters(name, hyper, pattern):
    with pytest.raises(ValueError, match=pattern):
        build(name, **hyper)


def test_bad_sizes_and_trainer_arguments():
    with pytest.raises(ValueError, match="n_items must be a positive integer"):
        SESSION_MODELS["gru4rec"](0, 5)
    with pytest.raises(ValueError, match="maxlen must be a positive integer"):
        SESSION_MODELS["bert4rec"](10, 0)
    data = cycle_data()
    with pytest.raises(ValueError, match="maxlen"):
        train_session_model(build("gru4rec", n_items=12, maxlen=5), data)
    with pytest.raises(ValueError, match="n_items"):
        train_session_model(build("gru4rec", n_items=13, maxlen=4), data)
    model = build("gru4rec", n_items=12, maxlen=4)
    with pytest.raises(ValueError, match="metric must be"):
        train_session_model(model, data, metric="mrr@10")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        train_session_model(model, data, batch_size=0)
    assert isinstance(BERT4Rec.DEFAULTS, dict)
