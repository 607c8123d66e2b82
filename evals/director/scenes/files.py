"""The names of a Director study's files, in a module of their own: asking whether a folder
holds a study (``benchmark.claims``) loads nothing else."""

SCENES_FILE = "scenes.jsonl"
