"""Trainings that survive their process (recunlearn.models.resume): a training stopped after any epoch
and resumed by a new process ends with the weights, loss curve and TracIn sums of the uninterrupted
training, bit for bit; the saved state is removed when the training finishes; a run's record counts
the seconds spent before the interruption."""

import copy

import pytest
import torch

from recunlearn.models.resume import ResumePoint, earlier_seconds, resume_epochs


class Stop(Exception):
    """Stands for the end of a process."""


class StopAfter(ResumePoint):
    """A resume point that writes the state after every epoch and ends the process after ``epoch``."""

    def __init__(self, path, epoch: int):
        super().__init__(path, every_seconds=0.0)
        self.stop_epoch = epoch

    def epoch_done(self, epoch, epochs, **progress):
        super().epoch_done(epoch, epochs, **progress)
        if epoch == self.stop_epoch:
            raise Stop


def _tiny_training(seed=0):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
    return net, torch.optim.Adam(net.parameters(), lr=0.01), torch.Generator().manual_seed(seed)


def _train(net, optimizer, generator, epochs, point=None):
    """A loop shaped like the library's: dropout from torch's global stream, data from ``generator``."""
    point, curve, start = resume_epochs(point, 0.0, net=net, optimizer=optimizer, generator=generator)
    for epoch in range(len(curve), epochs):
        x = torch.randn(16, 4, generator=generator)
        loss = net(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        curve.append(loss.item())
        point.epoch_done(epoch + 1, epochs, curve=curve, train_seconds=1.0 + epoch)
    point.finish()
    return curve


def test_an_interrupted_loop_resumes_bit_for_bit_and_removes_its_state(tmp_path):
    path = tmp_path / "state.pt"
    net, optimizer, generator = _tiny_training()
    torch.manual_seed(123)
    expected = _train(net, optimizer, generator, 5)

    net2, optimizer2, generator2 = _tiny_training()
    torch.manual_seed(123)
    with pytest.raises(Stop):
        _train(net2, optimizer2, generator2, 5, StopAfter(path, 3))
    assert path.is_file()
    before = earlier_seconds()
    net3, optimizer3, generator3 = _tiny_training()  # a new process builds everything from the seed again
    torch.manual_seed(999)  # the global stream (dropout) as the first process left it comes from the state
    point = ResumePoint(path, every_seconds=0.0)
    assert _train(net3, optimizer3, generator3, 5, point) == expected
    assert point.resumed_epoch == 3
    for p, q in zip(net.parameters(), net3.parameters()):
        assert torch.equal(p, q)
    assert not path.exists()
    assert earlier_seconds()["wall_seconds"] > before["wall_seconds"]


def test_nothing_is_written_after_the_last_epoch_or_before_it_is_due(tmp_path):
    path = tmp_path / "state.pt"
    net, optimizer, generator = _tiny_training()
    point = ResumePoint(path, every_seconds=3600.0)
    point.restore(net=net)
    point.epoch_done(1, 5, curve=[1.0])
    assert not path.exists()                      # not due yet
    point = ResumePoint(path, every_seconds=0.0)
    point.restore(net=net)
    point.epoch_done(5, 5, curve=[1.0] * 5)
    assert not path.exists()                      # a finished training has nothing to resume
    point.epoch_done(4, 5, curve=[1.0] * 4)
    assert path.is_file()


def test_a_foreign_or_unreadable_state_starts_the_training_afresh(tmp_path):
    path = tmp_path / "state.pt"
    net, optimizer, generator = _tiny_training()
    point = ResumePoint(path, every_seconds=0.0)
    point.restore(net=net)
    point.save(2, curve=[1.0, 2.0])
    assert ResumePoint(path).restore(net=copy.deepcopy(net), optimizer=optimizer) == {}   # other objects
    assert ResumePoint(path).restore(net=copy.deepcopy(net)) == {"curve": [1.0, 2.0]}
    path.write_bytes(b"not a state")
    assert ResumePoint(path).restore(net=net) == {}
    inert = ResumePoint(None)
    assert inert.restore(net=net) == {}
    inert.save(1)
    inert.finish()


def test_only_the_most_recent_states_are_kept(tmp_path):
    net = torch.nn.Linear(2, 2)
    for i in range(5):
        point = ResumePoint(tmp_path / f"{i}.pt", capacity=3)
        point.restore(net=net)
        point.save(1)
    assert len(list(tmp_path.glob("*.pt"))) == 3


# --- the CASPER models --------------------------------------------------------------------------------

@pytest.fixture
def stream(need_local):
    from recunlearn.data.sequences import load_stream

    need_local("foursquare", "raw")
    return load_stream("foursquare", max_rows=900)


@pytest.mark.parametrize("name, implementation, tracin", [("lstm", "fast", True), ("lstm", "reference", False),
                                                          ("tisasrec", "fast", False), ("tisasrec", "reference", False),
                                                          ("jodie", "fast", True), ("latentcross", "fast", True)])
def test_a_casper_model_resumed_after_an_epoch_ends_as_if_never_stopped(stream, tmp_path, name, implementation,
                                                                        tracin):
    from recunlearn.models.sequential import SEQUENTIAL_MODELS
    from recunlearn.perturb.tracin import TracInRecorder

    def fresh():
        torch.manual_seed(0)
        return SEQUENTIAL_MODELS[name](stream.n_items, generator=torch.Generator().manual_seed(0), epochs=3,
                                       implementation=implementation)

    def recorder():
        return TracInRecorder(stream, 3) if tracin else None

    plain, plain_recorder = fresh(), recorder()
    torch.manual_seed(0)
    expected = plain.fit(stream, checkpoint=plain_recorder)

    path = tmp_path / "state.pt"
    stopped = fresh()
    torch.manual_seed(0)
    with pytest.raises(Stop):
        stopped.fit(stream, checkpoint=recorder(), resume=StopAfter(path, 2))
    resumed, resumed_recorder = fresh(), recorder()
    torch.manual_seed(0)
    point = ResumePoint(path)
    fit = resumed.fit(stream, checkpoint=resumed_recorder, resume=point)
    assert point.resumed_epoch == 2                  # it did resume (a fresh start would end the same)
    assert fit["loss"] == expected["loss"]
    assert not path.exists()
    for (n, p), q in zip(resumed.net.named_parameters(), plain.net.parameters()):
        assert torch.equal(p, q), n
    if tracin:
        assert resumed_recorder.recorded == [1, 2, 3]
        assert (resumed_recorder.scores("exact") == plain_recorder.scores("exact")).all()
    # the test pass (online models: from the final states and optimiser) scores the same
    for (rows_a, _, a), (rows_b, _, b) in zip(resumed.test_scores(stream), plain.test_scores(stream), strict=True):
        assert (rows_a == rows_b).all() and torch.equal(a, b)


def test_a_run_stopped_in_its_perturbed_training_writes_the_record_of_an_uninterrupted_one(
        need_local, tmp_path, monkeypatch):
    """End to end: the process ends in the middle of M' (after epoch 1 of 2); the next computes the same
    record (metrics, losses) without training M or M''s first epoch again, and its cost counts the
    seconds spent before."""
    from recunlearn.experiments import casper, stored_models
    from recunlearn.experiments.casper import CasperConfig
    from recunlearn.experiments.records import compute_record

    need_local("foursquare", "raw")
    config = CasperConfig(selector="random", model="latentcross", dataset="foursquare", max_rows=1200, epochs=2)
    monkeypatch.setattr(casper, "_ORIGINALS", {})
    monkeypatch.delenv("RECUNLEARN_MODELS", raising=False)
    expected = compute_record(config)

    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    monkeypatch.setattr(casper, "_ORIGINALS", {})
    make = stored_models.resume_point
    monkeypatch.setattr(stored_models, "resume_point",
                        lambda kind, key, code: StopAfter(make(kind, key, code).path,
                                                          1 if kind == "casper-perturbed" else 0))
    with pytest.raises(Stop):
        compute_record(config)
    assert len(list(tmp_path.glob("resume/casper-perturbed/*.pt"))) == 1
    assert not list(tmp_path.glob("resume/casper-originals/*.pt"))   # M finished (and is stored)

    monkeypatch.setattr(stored_models, "resume_point", make)
    monkeypatch.setattr(casper, "_ORIGINALS", {})                       # a new process
    monkeypatch.setattr(casper, "_build", lambda *a: pytest.fail("M trained again"))
    record = compute_record(config)
    assert record["metrics"] == expected["metrics"] and record["loss_final"] == expected["loss_final"]
    assert not list(tmp_path.glob("resume/casper-perturbed/*.pt"))
    resumed = record["cost"]["resumed"]
    assert resumed["wall_seconds"] > 0 and record["cost"]["wall_seconds"] > resumed["wall_seconds"]


# --- the SRU session models ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, stop", [("gru4rec", 2), ("sasrec", 3), ("bert4rec", 1)])
def test_a_session_model_resumed_after_an_epoch_ends_as_if_never_stopped(tmp_path, name, stop):
    """Batch order, cloze draws and dropout streams, the best validated weights so far and the summary
    all continue: the resumed training restores the same best epoch and ends with the same weights."""
    import numpy as np

    from recunlearn.data.sessions import SessionData, Sessions
    from recunlearn.models.session import SESSION_MODELS, train_session_model

    starts = np.random.default_rng(0).integers(0, 12, 60)
    data = SessionData.from_sessions("cycle", Sessions.from_lists([[(s + j) % 12 + 1 for j in range(6)]
                                                                   for s in starts]), 12, 4, seed=0)

    def train(point=None):
        model = SESSION_MODELS[name](12, 4, generator=torch.Generator().manual_seed(0))
        result = train_session_model(model, data, torch.Generator().manual_seed(1), max_epochs=4, validate_every=2,
                                     resume=point)
        return model, result

    def without_seconds(result):
        return [{k: v for k, v in e.items() if "seconds" not in k} for e in result["curve"]]

    plain, expected = train()
    path = tmp_path / "state.pt"
    with pytest.raises(Stop):
        train(StopAfter(path, stop))
    point = ResumePoint(path)
    model, result = train(point)
    assert point.resumed_epoch == stop and not path.exists()
    assert without_seconds(result) == without_seconds(expected)
    assert result["best_epoch"] == expected["best_epoch"] and result["best_valid"] == expected["best_valid"]
    for key, value in model.state_dict().items():
        assert torch.equal(value, plain.state_dict()[key]), key


@pytest.mark.parametrize("kind", ["sru-full-data", "sru-shards"])
def test_an_sru_run_stopped_in_a_training_ends_as_the_uninterrupted_run(tmp_path, monkeypatch, kind):
    """End to end on synthetic sessions: the process ends after the first epoch of the full-data model
    (or of the first shard); the next process goes on from the saved state and unlearns exactly as a
    run never stopped."""
    from recunlearn.experiments import sru as exp
    from recunlearn.experiments import stored_models
    from sru_synthetic import config, synthetic_data

    data = synthetic_data()
    setting = config(method="sru")

    def fresh_process():
        exp._FULL_MODELS.clear()
        exp._SHARD_MODELS.clear()

    fresh_process()
    monkeypatch.delenv("RECUNLEARN_MODELS", raising=False)
    expected = exp.unlearn_sessions(setting, data)

    fresh_process()
    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    make = stored_models.resume_point
    monkeypatch.setattr(stored_models, "resume_point",
                        lambda name, key, code: StopAfter(make(name, key, code).path, 1 if name == kind else 0))
    with pytest.raises(Stop):
        exp.unlearn_sessions(setting, data)
    assert len(list(tmp_path.glob(f"resume/{kind}/*.pt"))) == 1

    fresh_process()
    monkeypatch.setattr(stored_models, "resume_point", make)
    before = earlier_seconds()["wall_seconds"]
    result = exp.unlearn_sessions(setting, data)
    assert earlier_seconds()["wall_seconds"] > before          # it did resume
    assert result["metrics"] == expected["metrics"]
    assert not list(tmp_path.glob("resume/*/*.pt"))
    fresh_process()
