"""User key remapping: a TOML file mapping binding ids to comma-separated keys.

Looked up at ``--keymap FILE``, else ``$SOCIALSIM_KEYMAP``, else
``~/.config/socialsim/keys.toml`` (absent is fine)::

    [keys]
    step = "n,j"
    quit = "ctrl+q"
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from engine import SocialsimError
from engine.core.tomlfile import read_toml


def keymap_path(explicit: Path | None = None) -> Path | None:
    """The keymap file to read, if any."""
    if explicit is not None:
        return explicit
    env = os.environ.get("SOCIALSIM_KEYMAP")
    if env:
        return Path(env)
    default = Path.home() / ".config" / "socialsim" / "keys.toml"
    return default if default.is_file() else None


def load_keymap(known: Sequence[str], explicit: Path | None = None) -> dict[str, str]:
    """Binding id -> keys for the ``known`` binding ids; a bad file is one clear error."""
    path = keymap_path(explicit)
    if path is None:
        return {}
    data = read_toml(path, "keymap", SocialsimError)
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise SocialsimError(f"{path}: [keys] must be a table")
    for binding_id, value in keys.items():
        if binding_id not in known:
            raise SocialsimError(
                f"{path}: keys.{binding_id}: unknown binding; known: {', '.join(known)}"
            )
        if not isinstance(value, str) or not value.strip():
            raise SocialsimError(f'{path}: keys.{binding_id}: give keys as a string like "n,j"')
    return dict(keys)


def bound_keys(binding: Binding, keymap: dict[str, str]) -> list[str]:
    """The keys that trigger ``binding`` after the user's ``keymap``."""
    return [k.strip() for k in keymap.get(binding.id or "", binding.key).split(",")]


def keys_shown(app: App, binding: Binding, keymap: dict[str, str]) -> list[str]:
    """Those keys as the footer shows them: ``?`` not ``question_mark``, ``^q``."""
    return [
        binding.key_display
        if binding.key_display and key == binding.key
        else app.get_key_display(Binding(key, binding.action))
        for key in bound_keys(binding, keymap)
    ]
