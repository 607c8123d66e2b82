"""The knobs of the simulated Director respondent (the model: :mod:`.respondent`), spelled
``dir_<knob>`` in a ``sim`` spec. Kept apart from the model so that teaching ``sim`` the
Director Task (:mod:`..sim_tasks`) imports no numerics.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DirectorKnobs(BaseModel):
    """What the simulated Director respondent does (module docstring). Rates are population
    means over scenes; every effect is a parameter, not a finding."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # nan is no rate
    # answering and format
    answer_rate: float = Field(0.98, ge=0.0, le=1.0)  # a turn's reply holds the asked JSON at all
    format_noise: float = Field(0.2, ge=0.0, le=1.0)  # fences, prose around the JSON, quoted numbers
    # the report
    vis_acc: float = Field(0.90, ge=0.0, le=1.0)  # the visibility (or knowledge) report is exactly right
    acc_move: float = Field(0.0, ge=-1.0, le=1.0)  # accuracy under move-type requests minus mean
    error_adds_hidden: float = Field(0.4, ge=0.0, le=1.0)  # share of wrong reports that add the hidden block
    follow_report: float = Field(0.25, ge=0.0, le=1.0)  # a report adding the hidden block: choose it
    count_acc: float = Field(0.97, ge=0.0, le=1.0)  # the block count is right
    # the own-view (hidden-block) rate
    hidden_novis: float = Field(0.05, ge=0.0, le=1.0)  # move-type requests without the visibility question
    uplift: float = Field(0.40, ge=-1.0, le=1.0)  # added by the visibility question under move
    will_factor: float = Field(1.25, ge=0.0)  # uplift multiplier under move-will
    want_factor: float = Field(0.3, ge=0.0)  # uplift multiplier under move-want
    hidden_mean: float = Field(0.01, ge=0.0, le=1.0)  # mean without the visibility question
    uplift_mean: float = Field(0.01, ge=-1.0, le=1.0)  # added by the visibility question under mean
    after_factor: float = Field(0.75, ge=0.0)  # share of the uplift with the question after B
    twoturn_factor: float = Field(1.0, ge=0.0)  # ... with the question in a first turn
    know_factor: float = Field(0.5, ge=0.0)  # ... with the knowledge question instead
    stated_factor: float = Field(0.1, ge=0.0)  # ... with the visible blocks stated instead
    count_factor: float = Field(0.05, ge=0.0)  # ... with the block-count question instead
    combined_factor: float = Field(0.02, ge=0.0)  # the combined constraint multiplies the rate
    knowledge_factor: float = Field(0.4, ge=0.0)  # ... the knowledge clause alone
    reference_factor: float = Field(0.5, ge=0.0)  # ... the reference clause alone
    padding_factor: float = Field(1.0, ge=0.0)  # ... the padding sentence
    top_digit_pull: float = 0.3  # logit added where the hidden block has the largest digit
    # choices other than the own-view target
    miss: float = Field(0.08, ge=0.0, le=1.0)  # such a choice misses the director-view block
    digit_reading: float = Field(0.85, ge=0.0, le=1.0)  # a miss takes the largest-digit visible block
    # scene heterogeneity (logit sd of the per-scene offsets)
    scene_sd: float = Field(1.0, ge=0.0, le=5.0)  # on the own-view rate
    acc_scene_sd: float = Field(0.5, ge=0.0, le=5.0)  # on the report accuracy
    # reasoning traces (module docstring, "Reasoning traces")
    traces: float = Field(1.0, ge=0.0, le=1.0)  # share of answered block replies that carry a trace
    trace_prior: float = Field(0.1, ge=0.0, le=1.0)  # an own-view pick reasoned as prior knowledge
    trace_works_out: float = Field(0.4, ge=0.0, le=1.0)  # a trace works out the view unasked
    trace_states_unseen: float = Field(0.95, ge=0.0, le=1.0)  # having worked it out: hidden pick unseen
    trace_states_seen: float = Field(0.55, ge=0.0, le=1.0)  # not worked out: states the pick seen
    # the simulated coder: the share of items whose reading it gets wrong
    coder_error: float = Field(0.02, ge=0.0, le=1.0)
