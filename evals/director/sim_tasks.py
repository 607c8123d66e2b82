"""``sim`` learns the Director Task: the ``director`` task (one turn of a condition, answered
from :class:`.task.oracle.DirectorTruth` by the respondent model, :mod:`.sim.simulated`), the
``director-code`` task (a batch of reasoning traces coded by reading them back,
:class:`.task.oracle.CoderTruth`), the ``dir_`` knobs and the ``director-*`` profiles.

Listed under the entry-point group ``unseen.sim_tasks`` (pyproject.toml), so the simulator
knows the Director Task whichever module was imported first; the heavy modules load on the
first Director request, so a SceneFunRI run does not pay for them.
"""

from __future__ import annotations

import random

from ...engine.oracle import Respondent, SimAnswer, register_knobs, sim_task
from .sim.knobs import DirectorKnobs
from .task.oracle import CoderTruth, DirectorTruth

#: Simulated Director respondents (knobs: :class:`.sim.knobs.DirectorKnobs`, spelled ``dir_``).
SIM_PROFILES = {
    "director-flat": {"dir_uplift": 0.0, "dir_uplift_mean": 0.0, "dir_follow_report": 0.0},
    "director-strong": {"dir_uplift": 0.8, "dir_uplift_mean": 0.03, "dir_want_factor": 0.5,
                        "dir_will_factor": 1.1, "dir_combined_factor": 0.05},
    "director-oracle": {"dir_vis_acc": 1.0, "dir_hidden_novis": 0.0, "dir_uplift": 0.0,
                        "dir_hidden_mean": 0.0, "dir_uplift_mean": 0.0, "dir_miss": 0.0,
                        "dir_answer_rate": 1.0, "dir_format_noise": 0.0, "dir_count_acc": 1.0,
                        "dir_top_digit_pull": 0.0, "dir_scene_sd": 0.0, "dir_acc_scene_sd": 0.0},
}
register_knobs("dir_", DirectorKnobs, SIM_PROFILES)


@sim_task("director")
def answer_director(sim: Respondent, truth: DirectorTruth, rng: random.Random) -> SimAnswer:
    """One turn of a Director condition: the JSON fields of ``truth.fields`` only, drawn
    from the respondent model with the ``dir_`` knobs; scene offsets from the scene id and
    ``seed``. A turn that chooses a block carries a reasoning trace (``dir_traces``)."""
    from .sim.simulated import respond_with_trace  # numerics load on the first Director request

    text, trace = respond_with_trace(sim.extra("dir_"), truth, rng, seed=sim.seed)
    return SimAnswer(text, reasoning=trace)


@sim_task("director-code")
def answer_coding(sim: Respondent, truth: CoderTruth, rng: random.Random) -> str:
    """A batch coded by reading the simulator's own traces back (``dir_coder_error``: the
    share of items given a wrong reading)."""
    from .coding.coder import sim_code  # LangGraph loads on the first coding request

    return sim_code(truth.items, truth.second_pass, sim.extra("dir_").coder_error, rng)
