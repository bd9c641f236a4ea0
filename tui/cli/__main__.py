"""``python -m tui.cli``."""

from . import main

main()
