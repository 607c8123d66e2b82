"""The cost cap's account (``engine.budget``): what a trajectory paid stays counted, and a
trajectory that got a reply has started, whoever submitted its line."""

from __future__ import annotations

from unseen.engine.budget import Budget


def test_a_reply_from_a_killed_runs_batch_starts_its_trajectory():
    """A resumed batch run picks up a line the killed run submitted: its reply arrives with
    no admit of this invocation. Its next call is a later step, not a first call, so the
    cap does not refuse it (refusing dropped the step already paid for from the account)."""
    b = Budget(cap=1.0, before=0.5)
    b.settle(0.0, "K", 1.0)  # step 1's reply, from the earlier run's batch
    assert b.total() == 1.5 and b.reached()
    assert b.admit("K", 0.1)  # step 2 goes: the trajectory is under way
    assert not b.admit("new", 0.1)  # a new trajectory does not
    b.settle(0.1, "K", 0.2)
    b.finish("K", 1.2)
    assert b.total() == 0.5 + 1.2 and b.live == {}


def test_the_live_total_follows_every_change():
    b = Budget(cap=10.0)
    for key, cost in (("a", 1.0), ("b", 2.0), ("a", 0.5)):
        assert b.admit(key, 0.25)
        b.settle(0.25, key, cost)
    assert b.total() == 3.5 and b.committed == 0.0
    b.refuse("b")
    assert b.total() == 1.5
    b.finish("a", 1.5)
    assert b.total() == 1.5 and b.live_total == 0.0 and b.spent == 1.5
