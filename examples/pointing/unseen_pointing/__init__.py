"""``pointing``: an example benchmark plug-in for unseen. Point at a coloured block hidden
behind one of two or three grey screens, in pictures the package draws itself (seeded).

- ``scenes.py`` lays out and draws a picture;
- ``data.py`` writes a data set (``make``) and reads one into unseen instances (``load``);
- ``make.py`` is its command, ``python -m unseen_pointing DIR``;
- ``benchmark.py`` is the benchmark (``unseen.engine.benchmark.Benchmark``): its data, its
  strategies, its scorer (``hit``, ``dist``), its plan and its resume rule;
- ``views.py`` is how ``unseen show`` and the other views show its runs.

pyproject.toml registers the benchmark under ``unseen.benchmarks`` and the views under
``unseen.views``; docs/writing-a-benchmark.md walks through all of it.
"""
