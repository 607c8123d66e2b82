"""SceneFunRI's data: reading a data set (``dataset``), SceneFun3D visits read and written
(``scenefun3d*``), instances built from them (``build``) and reviewed by a person
(``review``), procedural rooms written as visits (``rooms``), the flat synthetic stand-in
(``synthetic``) and the bundled sample set (``sample``, ``sample_set/``)."""
