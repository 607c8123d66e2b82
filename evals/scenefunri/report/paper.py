"""The SceneFunRI paper's own published numbers: quoted from the paper, not measured.

Transcribed from Tables 2 and 3 of the SceneFunRI paper (``seeds/000_7c410863970123cb.txt``).
Every value is as printed there, ×100 (CAcc@75, CAcc@50, mIoU in percentage points; Dist the
normalized corner distance ×100). Model names are as printed: Table 2 heads a series
"InternVL3" while Table 3 names "InternVL3_5-38B" and the text "InternVL 3.5"; both are
kept verbatim, and ``SAME_FAMILY`` says they are one family.

- Table 2: the basic prompt (this package's ``direct``), one row per model, and the human
  baseline.
- Table 3: strong-instruction prompts (Hidden, Common, Both → ``direct:prompt=...``) and
  reasoning prompts (CoT, CoT-SR → ``cot``, ``cot-sr``), each with its printed change against
  the model's Table 2 row. The printed changes were computed by the authors from unrounded
  numbers, so a change can differ by 0.01 from the difference of the printed values.

No intervals, sample sizes or costs were published; those fields are ``None``.
"""

from __future__ import annotations

from typing import Any

SOURCE = "paper"
NOTE = "quoted from the paper, not measured"
CITATION = "SceneFunRI paper, Tables 2 and 3"

# Paper prompt names → this package's strategy labels.
STRATEGY = {
    "basic": "direct",
    "Hidden": "direct:prompt=hidden",
    "Common": "direct:prompt=common",
    "Both": "direct:prompt=both",
    "CoT": "cot",
    "CoT-SR": "cot-sr",
    "human": "human",
}

# Spellings of one model family (lower case, the preferred first): the text (§5) and Table 3
# name InternVL 3.5, which Table 2 heads "InternVL3" (InternVL3-1B ... InternVL3-38B)
SAME_FAMILY = (("internvl3_5", "internvl3.5", "internvl3"),)

# model, series, CAcc@75, CAcc@50, mIoU, Dist
_TABLE2 = """\
Qwen3.5-0.8B	Qwen 3.5	3.63	5.73	0.06	79.70
Qwen3.5-4B	Qwen 3.5	10.99	14.27	0.31	38.93
Qwen3.5-9B	Qwen 3.5	11.11	12.87	0.31	45.03
Qwen3.5-27B	Qwen 3.5	7.95	10.29	0.34	38.90
Qwen3.5-122B	Qwen 3.5	12.63	16.14	0.41	39.76
InternVL3-1B	InternVL3	3.27	4.44	0.11	68.27
InternVL3-4B	InternVL3	3.98	4.21	0.17	41.80
InternVL3-8B	InternVL3	4.09	4.21	0.25	45.66
InternVL3-38B	InternVL3	3.86	4.21	0.34	35.55
gemma-3-4b-it	Gemma 3	4.21	4.21	0.12	43.02
gemma-3-12b-it	Gemma 3	4.09	4.44	0.07	41.67
gemma-3-27b-it	Gemma 3	7.60	7.72	0.12	43.35
MultiHopSpatial 4B	Spatial Reasoning	11.11	13.33	0.18	60.00
SenseNova-SI 8B	Spatial Reasoning	9.59	11.23	0.26	43.25
RoboBrain2.5 8B	Spatial Reasoning	6.32	6.55	0.31	44.52
Gemini 3 Flash	Gemini	15.20	17.19	0.74	28.65
Human baseline	Human	66.43	66.43	3.40	13.39
"""

# model, prompt, then (value, printed change) for CAcc@75, CAcc@50, mIoU, Dist
_TABLE3 = """\
Qwen3.5-27B	Hidden	16.73 +8.78	21.40 +11.11	0.33 -0.00	37.08 -1.82
Qwen3.5-27B	Common	8.42 +0.47	9.71 -0.58	0.37 +0.03	35.23 -3.67
Qwen3.5-27B	Both	16.49 +8.54	18.36 +8.07	0.37 +0.03	34.57 -4.33
Qwen3.5-27B	CoT	16.84 +8.89	19.88 +9.59	0.42 +0.08	34.34 -4.56
Qwen3.5-27B	CoT-SR	14.04 +6.09	16.73 +6.44	0.38 +0.04	37.18 -1.72
gemma-3-27b-it	Hidden	5.73 -1.87	6.20 -1.52	0.07 -0.04	45.74 +2.39
gemma-3-27b-it	Common	7.02 -0.58	7.49 -0.23	0.15 +0.03	41.88 -1.47
gemma-3-27b-it	Both	4.91 -2.69	5.38 -2.34	0.09 -0.02	47.98 +4.63
gemma-3-27b-it	CoT	7.13 -0.47	7.37 -0.35	0.15 +0.03	39.63 -3.72
gemma-3-27b-it	CoT-SR	6.78 -0.82	7.02 -0.70	0.16 +0.04	39.81 -3.54
InternVL3_5-38B	Hidden	4.09 +0.23	4.44 +0.23	0.21 -0.12	36.71 +1.16
InternVL3_5-38B	Common	3.51 -0.35	3.74 -0.47	0.16 -0.17	36.21 +0.66
InternVL3_5-38B	Both	3.16 -0.70	3.16 -1.05	0.23 -0.10	36.52 +0.97
InternVL3_5-38B	CoT	4.09 +0.23	4.44 +0.23	0.22 -0.11	42.67 +7.12
InternVL3_5-38B	CoT-SR	5.38 +1.52	5.50 +1.29	0.38 +0.04	43.39 +7.84
Qwen3.5-122B	Hidden	15.32 +2.69	19.06 +2.92	0.28 -0.12	41.89 +2.13
Qwen3.5-122B	Common	13.22 +0.59	15.79 -0.35	0.40 -0.00	38.68 -1.08
Qwen3.5-122B	Both	15.44 +2.81	19.06 +2.92	0.31 -0.09	38.64 -1.12
Qwen3.5-122B	CoT	15.79 +3.16	20.23 +4.09	0.37 -0.03	37.41 -2.35
Qwen3.5-122B	CoT-SR	16.02 +3.39	19.30 +3.16	0.38 -0.02	35.19 -4.57
Gemini 3 Flash	Hidden	25.03 +9.83	31.23 +14.04	0.69 -0.04	31.91 +3.26
Gemini 3 Flash	Common	5.26 -9.94	5.61 -11.58	0.74 +0.00	28.06 -0.59
Gemini 3 Flash	Both	19.77 +4.57	22.34 +5.15	0.72 -0.01	28.64 -0.01
Gemini 3 Flash	CoT	13.92 -1.28	17.08 -0.11	0.68 -0.05	28.79 +0.14
Gemini 3 Flash	CoT-SR	14.27 -0.93	17.31 +0.12	0.70 -0.03	28.55 -0.10
"""

METRICS = ("cacc75", "cacc50", "miou", "dist")


def _row(model: str, setting: str, table: str, series: str | None) -> dict[str, Any]:
    return {"model": model, "strategy": STRATEGY[setting], "paper_setting": setting,
            "series": series, "table": table, "source": SOURCE, "note": NOTE,
            "kind": "paper"}


def paper_rows() -> list[dict[str, Any]]:
    """Table 2, then Table 3 grouped by model as printed; fresh dicts on every call.

    Keys: ``model``, ``strategy`` (this package's label), ``paper_setting`` (the paper's
    name), ``series``, ``table`` ("2" or "3"), ``source`` ("paper"), ``note``, ``kind``,
    the four metrics and, for Table 3, ``delta_<metric>`` as printed.
    """
    rows = []
    for line in _TABLE2.splitlines():
        model, series, *vals = line.split("\t")
        setting = "human" if series == "Human" else "basic"
        row = _row(model, setting, "2", series)
        row.update({m: float(v) for m, v in zip(METRICS, vals, strict=True)})
        rows.append(row)
    for line in _TABLE3.splitlines():
        model, setting, *cells = line.split("\t")
        row = _row(model, setting, "3", None)
        for m, cell in zip(METRICS, cells, strict=True):
            value, delta = cell.split()
            row[m] = float(value)
            row[f"delta_{m}"] = float(delta)
        rows.append(row)
    return rows
