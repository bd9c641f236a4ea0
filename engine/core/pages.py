"""Large numpy arrays on ordinary pages: numpy asks Linux for transparent huge pages
(``madvise``) for every array of 4 MB or more, and where the kernel's huge page ``defrag``
setting is ``madvise`` (Ubuntu's default) each such page fault compacts memory on the
spot. A round of a thousand agents makes dozens of arrays of 8 MB: with huge pages asked
for, the kernel's time (about 0.5 s a round measured) was as long as the round's own."""

from __future__ import annotations


def small_pages() -> None:
    """Stop numpy asking for huge pages for its large arrays (process-wide; results are the
    same, only where the memory comes from changes). Without numpy's switch (a private
    one), nothing changes."""
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if switch is not None:
        switch(False)
