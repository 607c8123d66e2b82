"""Analysing a Director study: the estimators (``stats``), rates and comparisons
(``analyze``), their cells and four formats (``shown``, ``tables``, ``rich_tables``),
plots, costs, and the power of a design (``power``, ``power_report``)."""
