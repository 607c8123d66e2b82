"""The simulated Director respondent: its knobs, its probability model (``respondent``),
its replies (``simulated``) and the reasoning traces it writes to known codes (``traces``)."""
