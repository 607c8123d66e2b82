"""Engine overhead per step with an instant backend (target: median under 1 ms).

The backend answers at once, so everything measured is the engine: graph invocation, the
ask node (request, parse, Step), the Reliable wrapper, scoring and journaling. Trajectories
run one at a time so each one's time is its own. Prints medians and the ratio to the target.

    python benchmarks/engine_overhead.py [N]
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
from unseen.evals.scenefunri.sample import write_test_set
from unseen.strategies import build, strategy
from unseen.strategies.direct import box_oracle, read_box

TARGET_MS = 1.0


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
            oracle=box_oracle(state))

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


def measure(label: str, spec: str, data: Path, n_samples: int) -> float:
    ds = load_dataset(data)
    strat = build(spec)
    backend = Reliable(Instant("instant-model"), concurrency=1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = RunConfig(run="bench", data=str(data), dataset_fingerprint=ds.fingerprint,
                        instances=len(ds), strategies=[], backends=[], package_version="bench",
                        created_at="now")
        runner = Runner(ds.instances, [strat], [backend], Path(tmp), cfg, samples=n_samples,
                        score=scorer(), workers=1, progress=False)
        t0 = time.perf_counter()
        asyncio.run(runner.run())
        wall = time.perf_counter() - t0
        from unseen.engine.journal import iter_trajectories

        per_step = [t.seconds / len(t.steps) * 1000 for t in iter_trajectories(Path(tmp))]
    med = statistics.median(per_step)
    n = len(per_step)
    steps = n * (len(list(iter_steps(spec))) or 1)
    print(f"{label:<28} trajectories {n:>5}  median per step {med:6.3f} ms  "
          f"p90 {statistics.quantiles(per_step, n=10)[-1]:6.3f} ms  "
          f"wall per step incl. journal {wall / steps * 1000:6.3f} ms  "
          f"ratio to {TARGET_MS:g} ms target: {med / TARGET_MS:.2f}")
    return med


def langgraph_floor(n: int = 500) -> float:
    """Median ms of one invocation of a one-node graph that does nothing: LangGraph's own
    cost per step on this machine, the floor under any LangGraph strategy."""
    from unseen.evals.scenefunri.sample import bundled_sample

    inst = load_dataset(bundled_sample()).instances[0]

    async def noop(state):
        return {"status": "answered"}

    g = StateGraph(StrategyState)
    g.add_node("ask", noop)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile()

    async def go() -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await graph.ainvoke({"instance": inst, "sample": 0, "steps": []},
                                config={"recursion_limit": 5})
            out.append((time.perf_counter() - t0) * 1000)
        return out

    med = statistics.median(asyncio.run(go()))
    print(f"{'LangGraph floor (no-op node)':<28} median per step {med:6.3f} ms")
    return med


def iter_steps(spec: str):
    return range(8) if spec.startswith("bench-loop") else range(1)


def main() -> None:
    n_samples = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    with tempfile.TemporaryDirectory() as tmp:
        data = write_test_set(Path(tmp) / "data")
        floor = langgraph_floor()
        direct = measure("direct (1 step)", "direct", data, n_samples)
        loop = measure("loop (8 steps)", "bench-loop", data, max(1, n_samples // 4))
        print(f"unseen's own share per step beyond LangGraph's floor: direct "
              f"{direct - floor:.3f} ms, loop {loop - floor:.3f} ms")


if __name__ == "__main__":
    main()
