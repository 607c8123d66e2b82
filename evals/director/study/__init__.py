"""A Director study: its design (``design``, TOML, shipped in ``designs/``), the seeded
order of its calls (``runner``) and what its run directory's ``study.json`` says
(``study_file``)."""
