"""Per-iteration curves: recomputed by hand from the journal, and the oracle ceiling."""

import json

import pytest

import unseen
from unseen.engine.box import Box
from unseen.evals.scenefunri.metrics import dist
from unseen.evals.scenefunri.report.curves import curves, sparkline
from unseen.strategies.spoe import halving_regions


@pytest.fixture(scope="module")
def run_dir(sample_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("curves") / "run"
    unseen.run(sample_data, ["spoe:T=5", "direct"], ["sim", "sim:oracle"], out=out,
               cache=False, progress=False)
    return out


def test_curve_matches_the_journal(run_dir, instances):
    truth = {i.id: i for i in instances}
    recs = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    rows = {(r["model"], r["t"]): r for r in curves([run_dir]) if r["strategy"] == "spoe:T=5"}
    for model in ("sim-default", "sim-oracle"):
        mine = [r for r in recs if r["model"] == model and r["strategy"] == "spoe:T=5"]
        for t in range(6):
            vals, alive = [], []
            for r in mine:
                inst = truth[r["instance_id"]]
                regions = [Box.full(inst.width, inst.height).to_list()]
                for s in r["steps"]:
                    if s["region"] is None:
                        break
                    regions.append(s["region"])
                if t >= len(regions) and r["status"] != "answered":
                    # failed before t: scored as unanswered, the full image's Dist
                    vals.append(dist(regions[0], inst.truth["box"], inst.width, inst.height))
                    alive.append(False)
                    continue
                region = regions[min(t, len(regions) - 1)]
                vals.append(dist(region, inst.truth["box"], inst.width, inst.height))
                alive.append(Box.of(region).contains(Box.of(inst.truth["box"])))
            row = rows[(model, t)]
            assert row["n"] == len(mine) == 24
            assert row["dist"] == pytest.approx(100 * sum(vals) / len(vals))
            assert row["alive"] == pytest.approx(100 * sum(alive) / len(alive))
    assert rows[("sim-default", 0)]["alive"] == 100.0  # t = 0 is the whole image
    assert not any(r["strategy"] == "direct" for r in curves([run_dir]))


def test_sim_oracle_is_the_ceiling(run_dir):
    rows = curves([run_dir], ceiling=True)
    oracle = [r for r in rows if r["model"] == "sim-oracle"]
    ceiling = [r for r in rows if r["model"] == "oracle (ceiling)"]
    assert len(oracle) == len(ceiling) == 6
    for a, b in zip(oracle, ceiling, strict=True):
        assert a["t"] == b["t"] and a["dist"] == pytest.approx(b["dist"])
        assert a["alive"] == pytest.approx(b["alive"])


def test_halving_regions_by_hand():
    # target low right in a 1000x800 image: the oracle keeps right, bottom, right, bottom
    regions = halving_regions([700, 650, 760, 700], 1000, 800, 4)
    assert regions == [[500, 0, 1000, 800], [500, 400, 1000, 800], [500, 400, 750, 800],
                       [500, 600, 750, 800]]
    # a target on the first cut: the perfect chooser still loses part of it
    cut = halving_regions([480, 100, 520, 140], 1000, 800, 1)[0]
    assert not Box.of(cut).contains(Box.of([480, 100, 520, 140]))


def test_sparkline():
    assert sparkline([0, 1, 2]) == "▁▅█"
    assert len(sparkline([5, 5, 5])) == 3


def test_curve_command(run_dir, run_main, tmp_path):
    code, out, _ = run_main(["curve", str(run_dir), "--format", "json", "--ceiling"])
    rows = json.loads(out)
    assert code == 0 and {"model", "strategy", "t", "dist", "alive"} <= rows[0].keys()
    assert any(r["model"] == "oracle (ceiling)" for r in rows)
    code, out, _ = run_main(["curve", str(run_dir), "-f", "png", "--out", str(tmp_path / "c.png")])
    assert code == 0 and (tmp_path / "c.png").stat().st_size > 10_000
    code, out, _ = run_main(["curve", str(run_dir), "--metric", "alive"])
    assert code == 0 and "alive per iteration" in out and "spoe:T=5" in out
    code, _, err = run_main(["curve", str(run_dir), "--metric", "speed"])
    assert code == 2 and err.startswith("error:")


def test_curve_json_carries_the_direct_line(run_dir, run_main):
    """Each row carries its model's direct result, the paper's dashed line."""
    code, out, _ = run_main(["curve", str(run_dir), "--format", "json"])
    rows = json.loads(out)
    direct = unseen.evals.scenefunri.report.curves.direct_baselines([run_dir])
    assert code == 0 and rows
    for r in rows:
        assert r["direct"] == direct[r["model"]]
        assert r["simulated"] is True


def test_grid_ceiling_by_hand():
    from unseen.strategies.spoe_grid import GridParams, grid_regions

    # 2x2 grid of a 1000x800 image; the target sits in the bottom-right cell, then in the
    # top-left cell of that cell's grid
    regions = grid_regions([600, 450, 700, 550], 1000, 800, GridParams(T=2))
    assert regions == [[500, 400, 1000, 800], [500, 400, 750, 600]]
    # a target across the vertical cut keeps both cells of its row
    assert grid_regions([450, 100, 550, 150], 1000, 800, GridParams(T=1)) == [[0, 0, 1000, 400]]


def test_best_first_ceiling_is_halving_then_holds():
    from unseen.strategies.spoe_search import SearchParams, best_first_regions

    regions = best_first_regions([700, 650, 760, 700], 1000, 800, SearchParams(T=3))
    assert len(regions) == 6  # the default budget: 2T calls
    assert regions[:3] == halving_regions([700, 650, 760, 700], 1000, 800, 3)
    assert regions[3:] == [regions[2]] * 3


@pytest.fixture(scope="module")
def family_run(sample_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("families") / "run"
    unseen.run(sample_data, ["spoe-grid:T=2", "spoe-search:T=3", "spoe:T=3",
                             "spoe:T=3,mode=keep"], ["sim:oracle"], out=out, cache=False,
               progress=False, limit=8)
    unseen.run(sample_data, ["spoe:T=3"], ["sim:default,unparseable=1"], out=out, cache=False,
               progress=False, limit=8)
    return out


def test_each_family_has_its_own_ceiling(family_run):
    rows = curves([family_run], ceiling=True)
    ceilings = {r["strategy"]: r["ceiling"] for r in rows if r["model"] == "oracle (ceiling)"}
    # spoe and spoe:mode=keep share one halving ceiling: a perfect chooser is the same
    assert ceilings == {"spoe-grid:T=2": "grid", "spoe-search:T=3": "best-first",
                        "spoe:T=3 / spoe:T=3,mode=keep": "halving"}
    # the simulated oracle on the grid is the grid's perfect chooser: the curves coincide
    sim = [r for r in rows if r["model"] == "sim-oracle" and r["strategy"] == "spoe-grid:T=2"]
    top = [r for r in rows if r["model"] == "oracle (ceiling)" and r["strategy"] == "spoe-grid:T=2"]
    assert [r["dist"] for r in sim] == pytest.approx([r["dist"] for r in top])
    assert len([r for r in rows if r["strategy"] == "spoe-search:T=3"
                and r["model"] == "sim-oracle"]) == 7  # t = 0 .. the budget of 6 calls


def test_a_strategy_whose_every_trajectory_failed_is_left_out_with_a_note(family_run, run_main):
    notes: list[str] = []
    rows = curves([family_run], notes=notes)
    assert not any(r["model"].startswith("sim-default") for r in rows)
    assert any("sim-default,unparseable=1" in n and "every trajectory (8) failed" in n
               for n in notes)
    code, _, err = run_main(["curve", str(family_run)])
    assert code == 0 and "every trajectory (8) failed" in err


def test_only_strategies_that_declare_iteration_take_part(sample_data, tmp_path):
    """A strategy takes part because it declares that it iterates, not because a parameter
    happens to be called ``T``."""
    from langgraph.graph import END, START, StateGraph
    from pydantic import BaseModel

    from unseen.engine.graph import Iterates, Parsed, StrategyState, ask_node
    from unseen.engine.types import ImagePart, Message, Request, TextPart
    from unseen.strategies import strategy
    from unseen.strategies.kit import box_truth, read_box

    class P(BaseModel):
        rounds: int = 2
        T: int = 9  # not an iteration count

    def graph(params):
        def req(state, backend):
            inst = state["instance"]
            return Request(messages=[Message(role="user", parts=[
                ImagePart(path=inst.image), TextPart(text=f"round {state.get('t', 0)}")])],
                oracle=box_truth(inst))

        def parse(state, backend, reply):
            inst = state["instance"]
            p = read_box(reply.text, backend.box_format, inst.width, inst.height)
            return Parsed(value=p.value, error=p.error, region=p.value)

        def update(state, step, parsed: Parsed):
            return {"prediction": parsed.value, "status": "answered", "t": state.get("t", 0) + 1}

        g = StateGraph(StrategyState)
        g.add_node("ask", ask_node("ask", req, parse, update))
        g.add_edge(START, "ask")
        g.add_conditional_edges("ask", lambda s: "ask" if s.get("t", 0) < params.rounds else END)
        return g

    strategy("test-rounds", params=P, iterates=Iterates(length=lambda p: p.rounds))(graph)
    strategy("test-not-iterating", params=P)(graph)
    # declares its iterations under a node name the graph does not use
    strategy("test-misnamed", params=P,
             iterates=Iterates(length=lambda p: p.rounds, node="narrow"))(graph)
    unseen.run(sample_data, ["test-rounds", "test-not-iterating", "test-misnamed"],
               ["sim:oracle"], out=tmp_path / "r", cache=False, progress=False, limit=3)
    notes: list[str] = []
    rows = curves([tmp_path / "r"], ceiling=True, notes=notes)
    assert {r["strategy"] for r in rows} == {"test-rounds"}  # no ceiling declared: none drawn
    assert [r["t"] for r in rows] == [0, 1, 2]
    # the slip is named as what it is, not as trajectories that failed
    assert any("test-misnamed" in n and "named 'narrow'" in n for n in notes)
    assert not any("test-misnamed" in n and "failed" in n for n in notes)


def _records(run_dir):
    return [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]


def _failed_late(recs):
    """Unanswered trajectories that failed after their first region and before T."""
    return [r for r in recs if r["status"] == "unanswered"
            and 0 < sum(s["region"] is not None for s in r["steps"]) < r["params"]["T"]]


@pytest.fixture(scope="module")
def failing_runs(sample_data, tmp_path_factory):
    """SPoE with replies that often cannot be read: scored with both unanswered rules."""
    base = tmp_path_factory.mktemp("failing")
    for rule in ("full", "skip"):
        unseen.run(sample_data, ["spoe:T=4"], ["sim:default,unparseable=0.2"],
                   out=base / rule, cache=False, progress=False, unanswered=rule)
    return base


@pytest.mark.parametrize("rule", ["full", "skip"])
def test_the_curve_at_T_is_the_table(failing_runs, rule):
    """An unanswered trajectory is scored as the table scores it, so the last iteration of
    the curve and the table's row agree on every metric."""
    from unseen.evals.scenefunri.report.summary import summarize

    run_dir = failing_runs / rule
    assert len(_failed_late(_records(run_dir))) >= 3
    table = summarize([run_dir])[0]
    last = max((r for r in curves([run_dir])), key=lambda r: r["t"])
    assert last["t"] == 4 and table["strategy"] == last["strategy"] == "spoe:T=4"
    for metric, column in (("dist", "dist"), ("cacc50", "cacc50"), ("cacc75", "cacc75"),
                           ("iou", "miou")):
        assert last[metric] == pytest.approx(table[column]), metric


def test_a_failed_trajectory_scores_as_unanswered_from_its_failure(failing_runs, instances,
                                                                    tmp_path):
    """One trajectory that failed at step k < T: the regions before k, then the table's
    unanswered score (the full image's Dist, CAcc and IoU 0, the target not kept)."""
    src = failing_runs / "full"
    rec = _failed_late(_records(src))[0]
    k = next(i for i, s in enumerate(rec["steps"], start=1) if s["region"] is None)
    run_dir = tmp_path / "one"
    run_dir.mkdir()
    (run_dir / "run.json").write_text((src / "run.json").read_text())
    (run_dir / "trajectories.jsonl").write_text(json.dumps(rec) + "\n")
    inst = next(i for i in instances if i.id == rec["instance_id"])
    gt, w, h = inst.truth["box"], inst.width, inst.height
    rows = sorted(curves([run_dir]), key=lambda r: r["t"])
    assert [r["t"] for r in rows] == [0, 1, 2, 3, 4]
    for r in rows[1:k]:
        region = rec["steps"][r["t"] - 1]["region"]
        assert r["dist"] == pytest.approx(100 * dist(region, gt, w, h))
    for r in rows[k:]:
        assert r["dist"] == pytest.approx(100 * dist(Box.full(w, h), gt, w, h))
        assert r["cacc50"] == r["cacc75"] == r["iou"] == r["alive"] == 0.0
    # the TUI's track of this trajectory follows the same rule
    from unseen.views.scenefunri.tui import dist_track

    assert dist_track(rec, gt, (w, h)) == pytest.approx([r["dist"] for r in rows])


def test_the_curve_at_T_is_the_table_for_a_confidence_stop(sample_data, tmp_path):
    """spoe:tau stops with the region as it was before the unsure step; that step's region
    is that one, so the curve scores what the trajectory answers (it read the region the
    model had picked: Dist 60.0 against the table's 70.5 on one run)."""
    from unseen.evals.scenefunri.report.summary import summarize

    run_dir = tmp_path / "tau"
    unseen.run(sample_data, ["spoe:T=4,tau=0.9"], ["sim"], out=run_dir, cache=False,
               progress=False)
    recs = _records(run_dir)
    stopped = [r for r in recs if r["status"] == "answered" and len(r["steps"]) < 4]
    assert stopped  # some trajectories stopped on an unsure choice
    for r in stopped:
        assert r["steps"][-1]["region"] == r["prediction"]
    table = summarize([run_dir])[0]
    last = max(curves([run_dir]), key=lambda r: r["t"])
    for metric, column in (("dist", "dist"), ("cacc50", "cacc50"), ("iou", "miou")):
        assert last[metric] == pytest.approx(table[column]), metric


def test_a_finishing_box_is_named_where_the_curve_and_table_part(sample_data, tmp_path):
    """spoe:finish=direct answers with a box asked inside its last region: the curve draws
    the regions and the table scores the boxes, so a note says the two differ; plain spoe
    answers with its last region and gets no such note."""
    run_dir = tmp_path / "finish"
    unseen.run(sample_data, ["spoe:T=2,finish=direct", "spoe:T=2"], ["sim"], out=run_dir,
               cache=False, progress=False, limit=12)
    notes: list[str] = []
    curves([run_dir], notes=notes)
    (note,) = [n for n in notes if "other than their last region" in n]
    assert "spoe:T=2,finish=direct" in note and "not the table's row" in note
    apart = sum(r["status"] == "answered" and r["prediction"] != r["steps"][-2]["region"]
                for r in _records(run_dir) if r["strategy"] == "spoe:T=2,finish=direct")
    assert f"{apart} of 12 trajectories" in note
