"""Pixels: overlays, rasterizer, scenes, terminal images and plots."""
