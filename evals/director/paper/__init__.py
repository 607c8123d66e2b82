"""The Director paper's numbered tables and figures from a study's analysis (``tables``,
``figures``, the cells they pick: ``picks``), and which verdicts change on a subset of the
scenes (``verdicts``)."""
