"""Every bundled scenario, mutated at random, loads or fails with one line naming the file
and the field: never a traceback, never a control character on the terminal, and a run of
a broken file writes nothing. The long variant (``-m slow``) tries 20 times as many."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from engine import ScenarioError
from engine.core.scenario import load_scenario_file
from robustness.scenario_mutations import check_error, mutated_data, mutated_text, to_toml

FAST = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LONG = settings(FAST, max_examples=3000)
_counter = itertools.count()


def _file(folder: Path, raw: bytes) -> Path:
    path = folder / f"mutant-{next(_counter)}.toml"
    path.write_bytes(raw)
    return path


def _load(path: Path, data: dict | None = None) -> None:
    try:
        load_scenario_file(path)
    except ScenarioError as err:
        check_error(str(err), path, data)


def _data_case(folder: Path, case: tuple[str, dict, str]) -> None:
    _sid, data, _done = case
    _load(_file(folder, to_toml(data).encode()), data)


def _text_case(folder: Path, case: tuple[str, bytes, str]) -> None:
    _sid, raw, _done = case
    _load(_file(folder, raw))


@FAST
@given(case=mutated_data())
def test_mutated_scenario_data_loads_or_is_one_line(tmp_path: Path, case):
    _data_case(tmp_path, case)


@FAST
@given(case=mutated_text())
def test_mutated_scenario_text_loads_or_is_one_line(tmp_path: Path, case):
    _text_case(tmp_path, case)


@pytest.mark.slow
@LONG
@given(case=mutated_data())
def test_mutated_scenario_data_long(tmp_path: Path, case):
    _data_case(tmp_path, case)


@pytest.mark.slow
@LONG
@given(case=mutated_text())
def test_mutated_scenario_text_long(tmp_path: Path, case):
    _text_case(tmp_path, case)


@settings(FAST, max_examples=30)
@given(case=mutated_data())
def test_a_run_of_a_mutated_scenario_plays_or_writes_nothing(
    run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case
):
    monkeypatch.setenv("COLUMNS", "200")
    _sid, data, _done = case
    path = _file(tmp_path, to_toml(data).encode())
    saves = tmp_path / f"saves-{next(_counter)}"
    result = run_cli("run", str(path), "--rounds", "1", "-q", "--saves", str(saves))
    assert "Traceback" not in result.out + result.err
    if result.code == 0:
        assert len([p for p in saves.iterdir() if not p.name.startswith(".")]) == 1
        assert unsafe_char_free(result.out)
    else:
        assert result.code == 2, (result.code, result.err)
        assert result.err.count("\n") == 1, result.err
        check_error(result.err.removeprefix("socialsim: error: ").rstrip("\n"), path, data)
        assert not saves.exists() or not any(saves.iterdir())


def unsafe_char_free(text: str) -> bool:
    from engine.core.textsafe import unsafe_char

    return unsafe_char(text, multiline=True) is None


if __name__ == "__main__":  # pragma: no cover - a quick manual look at the mutants
    from hypothesis import find

    print(find(mutated_data(), lambda c: True), file=sys.stderr)
