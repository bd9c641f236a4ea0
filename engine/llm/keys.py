"""The API key an exchange sends: never stored, never sent where it does not belong."""

from __future__ import annotations

import os

from ..errors import SocialsimError
from .settings import LLMSettings

#: Sent as the API key to an ``api_base`` unless ``api_key_env`` names a variable (a local
#: server must not receive OPENAI_API_KEY and the like unless asked).
PLACEHOLDER_KEY = "no-key"


def api_key(settings: LLMSettings) -> str | None:
    """The key to send: the named variable's value, a placeholder for an ``api_base``, or
    None (litellm reads the provider's usual variable). Never stored."""
    name = settings.api_key_env
    if name is None:
        return PLACEHOLDER_KEY if settings.api_base else None
    value = os.environ.get(name, "")
    if not value:
        raise SocialsimError(f"--api-key-env {name}: {name} is not set in the environment")
    return value
