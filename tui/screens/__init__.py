"""The main screen, and the screens and dialogs opened from it."""
