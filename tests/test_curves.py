"""Per-iteration curves: recomputed by hand from the journal, and the oracle ceiling."""

import json

import pytest

import unseen
from unseen.engine.box import Box
from unseen.evals.scenefunri.curves import curves, oracle_regions, sparkline
from unseen.evals.scenefunri.metrics import dist


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


def test_oracle_regions_by_hand():
    # target low right in a 1000x800 image: the oracle keeps right, bottom, right, bottom
    regions = oracle_regions([700, 650, 760, 700], 1000, 800, 4)
    assert regions == [[500, 0, 1000, 800], [500, 400, 1000, 800], [500, 400, 750, 800],
                       [500, 600, 750, 800]]
    # a target on the first cut: the perfect chooser still loses part of it
    cut = oracle_regions([480, 100, 520, 140], 1000, 800, 1)[0]
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
