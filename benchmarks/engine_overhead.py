"""Engine overhead per step with an instant backend: unseen's own share beyond LangGraph's
floor (target: under 0.5 ms per step, measured in the same run as the floor).

The backend answers at once, so everything measured is the engine: graph invocation, the
ask node (request, parse, Step), the Reliable wrapper, scoring and journaling. Next to it,
a graph over the same state whose node does nothing measures LangGraph's own cost per step
(the floor under any LangGraph strategy); the difference is unseen's share. Each figure is
CPU time (``time.process_time``, every thread of the process: the journal writer's too) of
a whole batch divided by its steps, not a sub-millisecond wall time; the four batches
alternate within each round, and each round's share is taken against that round's floor.

    python benchmarks/engine_overhead.py [ROUNDS]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from unseen.backends.base import BaseBackend
from unseen.backends.reliable import Reliable
from unseen.engine.graph import StrategyState, ask_node
from unseen.engine.runner import Runner
from unseen.engine.types import Reply, RunConfig
from unseen.evals.scenefunri import load_dataset, scorer
from unseen.evals.scenefunri.data.sample import write_test_set
from unseen.strategies import build, strategy
from unseen.strategies.kit import box_truth, read_box

TARGET_MS = 0.5  # unseen's own share per step, beyond LangGraph's floor


class Instant(BaseBackend):
    provider = "instant"
    cacheable = False

    async def complete(self, request):
        return Reply(text='{"box": [100, 100, 300, 300]}', finish_reason="stop")


class LoopParams(BaseModel):
    steps: int = 8


@strategy("bench-loop", params=LoopParams, recursion_limit=lambda p: p.steps + 5)
def _loop(params):
    """A loop of asks, like an elimination strategy: one Step per iteration."""
    from unseen.engine.types import ImagePart, Message, Request, TextPart

    def req(state, backend):
        inst = state["instance"]
        return Request(messages=[Message(role="user", parts=[
            ImagePart(path=inst.image), TextPart(text=f"step {state.get('t', 0)}")])],
            oracle=box_truth(state["instance"]))

    def parse(state, backend, reply):
        inst = state["instance"]
        return read_box(reply.text, backend.box_format, inst.width, inst.height)

    def update(state, step, parsed):
        return {"prediction": parsed.value, "status": "answered", "t": state.get("t", 0) + 1}

    g = StateGraph(StrategyState)
    g.add_node("ask", ask_node("ask", req, parse, update))
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", lambda s: "ask" if s.get("t", 0) < params.steps else END)
    return g


def run_strategy(spec: str, data: Path, n_samples: int) -> tuple[float, float]:
    """CPU ms per step of the whole run (the journal's serialising, queueing and writer
    thread included), and its wall ms per step, for scale."""
    from unseen.engine.journal import iter_trajectories

    ds = load_dataset(data)
    strat = build(spec)
    backend = Reliable(Instant("instant-model", box_format="pixel"), concurrency=1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(run="bench", benchmark="scenefunri", data=str(data),
                        dataset_fingerprint=ds.fingerprint, instances=len(ds), strategies=[],
                        backends=[], package_version="bench", created_at="now")
        runner = Runner(ds.instances, [strat], [backend], Path(tmp), cfg, samples=n_samples,
                        score=scorer(), workers=1, progress=False)
        c0, t0 = time.process_time(), time.perf_counter()
        asyncio.run(runner.run())
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        steps = sum(len(t.steps) for t in iter_trajectories(Path(tmp)))
    return cpu / steps * 1000, wall / steps * 1000


def floor_graph(steps: int):
    """A graph over the same state whose node does nothing, looping ``steps`` times: what
    LangGraph itself costs per step on this machine, under any LangGraph strategy."""

    async def noop(state):
        return {"status": "answered", "t": state.get("t", 0) + 1}

    g = StateGraph(StrategyState)
    g.add_node("ask", noop)
    g.add_edge(START, "ask")
    if steps == 1:  # the shape of direct: START -> ask -> END
        g.add_edge("ask", END)
    else:
        g.add_conditional_edges("ask", lambda s: "ask" if s.get("t", 0) < steps else END)
    return g.compile()


def run_floor(steps: int, invocations: int) -> float:
    """CPU ms per step of ``invocations`` runs of the no-op graph, one after another."""
    from unseen.evals.scenefunri.data.sample import bundled_sample

    inst = load_dataset(bundled_sample()).instances[0]
    graph = floor_graph(steps)
    cfg = {"recursion_limit": steps + 5, "configurable": {"backend": None}}

    async def go() -> None:
        for _ in range(invocations):
            await graph.ainvoke({"instance": inst, "sample": 0, "steps": []}, config=cfg)

    c0 = time.process_time()
    asyncio.run(go())
    return (time.process_time() - c0) / (steps * invocations) * 1000


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    med = statistics.median
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = write_test_set(Path(tmp) / "data")
        n = len(load_dataset(data))
        # interleaved rounds: this machine's speed drifts, so each round's figures are
        # compared with the same round's floor
        for _ in range(rounds):
            direct, direct_wall = run_strategy("direct", data, max(1, 240 // n))
            f1 = run_floor(1, 240)
            loop, loop_wall = run_strategy("bench-loop", data, max(1, 60 // n))
            f8 = run_floor(8, 60)
            for key, value in (("floor 1", f1), ("floor 8", f8),
                               ("direct", direct), ("direct wall", direct_wall),
                               ("loop", loop), ("loop wall", loop_wall),
                               ("direct - floor", direct - f1),
                               ("loop - floor", loop - f8),
                               ("direct / floor", direct / f1), ("loop / floor", loop / f8)):
                rows.setdefault(key, []).append(value)
    labels = {
        "floor 1": "LangGraph alone, 1-step graph (no-op node)",
        "floor 8": "LangGraph alone, 8-step loop (no-op node)",
        "direct": "direct: CPU per step, journal incl.",
        "direct wall": "direct: wall per step (for scale)",
        "loop": "8-step loop: CPU per step, journal incl.",
        "loop wall": "8-step loop: wall per step (for scale)",
        "direct - floor": "unseen's own share, direct",
        "loop - floor": "unseen's own share, loop",
        "direct / floor": "direct / LangGraph alone (ratio)",
        "loop / floor": "loop / LangGraph alone (ratio)",
    }
    print(f"{rounds} interleaved rounds; CPU ms per step (process_time of each batch / its "
          f"steps): median of the rounds [lowest round]; target: unseen's own share under "
          f"{TARGET_MS:g} ms")
    for key, label in labels.items():
        vals = rows[key]
        ratio = (f"  ratio to target {med(vals) / TARGET_MS:5.2f}" if key.endswith("- floor")
                 else "")
        print(f"  {label:<46} {med(vals):6.3f}  [{min(vals):6.3f}]{ratio}")


if __name__ == "__main__":
    main()
