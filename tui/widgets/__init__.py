"""Widgets of the main screen, one module per feature."""
