"""Coding a Director study's reasoning traces (§5 "Reasoning traces", Appendix E).

- ``items``: which traces a pass codes, their neutral ids and batches, where codes are kept;
- ``coder``: the ``director-code`` strategy and the simulated coder;
- ``report``: what the codes say, the coder's checks, the second pass;
- ``sheets``: answer sheets for people and their agreement; ``agreement``: Cohen's kappa.

The codebook (the three codes, the coder's prompt and schema, reading a coder's reply) is
``task.codebook``: the simulated respondent writes its traces to the same codes.
"""
