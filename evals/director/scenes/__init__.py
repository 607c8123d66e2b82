"""The Director Task's scenes: layouts (``layout``, checked analytically by ``geometry``),
their meshes and rendered images (``render``, the second checker), scene sets written to a
folder (``sets``) and read back as instances (``dataset``)."""
