"""House rules that run: import hygiene of the engine and the one way to ask a mind."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import engine

ROOT = Path(__file__).resolve().parent.parent
ENGINE_MODULES = sorted(m.name for m in pkgutil.walk_packages(engine.__path__, prefix="engine."))
UI_PACKAGES = ("textual", "rich", "tui")


def test_the_walk_finds_the_engine():
    assert {"engine.round.simulation", "engine.minds.llm", "engine.llm.client"} <= set(
        ENGINE_MODULES
    )


def test_every_engine_module_imports_without_the_ui():
    """Each engine module imports on its own, in a fresh interpreter, and pulls in no UI."""
    script = (
        "import importlib, sys\n"
        f"for name in {ENGINE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {UI_PACKAGES!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (top level or inside functions)."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if path.name == "__init__.py":
        package = module.removesuffix(".__init__")
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return names


def test_only_minds_reach_the_structured_client():
    """Every structured question goes through ``Mind.ask``: outside ``engine/minds`` (and the
    LLM layer itself) no module imports the client or the transport."""
    offenders = []
    for path in sorted((ROOT / "engine").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("engine/minds/", "engine/llm/")):
            continue
        reached = {n for n in _imports(path) if n.startswith(("engine.llm.client", "litellm"))}
        if reached:
            offenders.append(f"{rel}: {sorted(reached)}")
    assert offenders == []


def test_no_module_calls_a_minds_client():
    """``mind.client`` is the LLM mind's own business."""
    reach = re.compile(r"\bmind\.client\b")
    offenders = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "engine").rglob("*.py")) + sorted((ROOT / "tui").rglob("*.py"))
        if not path.relative_to(ROOT).as_posix().startswith("engine/minds/")
        and reach.search(path.read_text())
    ]
    assert offenders == []


def test_the_detector_sees_a_relative_import():
    """The AST walk resolves relative imports (so the rule above cannot pass vacuously)."""
    assert "engine.llm.client" in _imports(ROOT / "engine" / "minds" / "llm.py")
    assert "engine.llm.client.LLMClient" in _imports(ROOT / "engine" / "minds" / "llm.py")
