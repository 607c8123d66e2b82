"""The ``unseen`` command line's commands, by group (``unseen.cli`` assembles them)."""
