"""Spec loader and per-language renderers: see scripts/generate."""
