"""What a Director Task respondent is asked and how its reply is read: the prompt
conditions (``prompts``), the ``director`` strategy, reading a reply (``parse``), the
measures of one reply (``measures``), the simulator's truth (``oracle``), and the codebook
a coder is asked to code reasoning traces by (``codebook``)."""
