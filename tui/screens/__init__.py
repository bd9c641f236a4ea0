"""Screens and dialogs opened from the main screen."""
