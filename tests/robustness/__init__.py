"""The fault and bad-input sweep (issue 14)."""
