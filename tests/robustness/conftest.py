"""The fault and bad-input sweep: a plain terminal, a saves folder, the CLI in-process."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide, colourless output so rich does not wrap or style what the tests read."""
    monkeypatch.setenv("COLUMNS", "250")
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The saves folder, selected through ``$SOCIALSIM_SAVES`` (not created yet)."""
    folder = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(folder))
    return folder


@pytest.fixture
def socialsim(run_cli, saves: Path):
    """``socialsim(*args) -> CliResult`` on the ``saves`` folder."""
    return run_cli
