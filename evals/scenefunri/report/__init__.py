"""Reading SceneFunRI runs and data: comparison rows from run directories (``summary``),
their cells and formats (``cells``, ``formats``, ``table``), the paper's quoted rows and
its tables laid out beside ours (``paper*``), per-iteration curves (``curves``), the
instance bootstrap (``bootstrap``), which instances a figure draws (``picks``), and a data
folder's dataset card (``dataset_card``)."""
