"""The key footer, fitted to the terminal's width.

Textual's footer shows every key and lets the ones past the right edge fall off. This one
shows the keys in the screen's binding order (most used first) while they fit, one key per
action (the user's, after any keymap), and always ends with help (which lists the rest) and quit.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: The bindings always shown (by id), at the end.
PINNED = ("help", "quit")
#: From this width on, the roomier style and the command palette key.
ROOMY_FROM = 140


class KeyFooter(Footer):
    """A one-line footer of the keys that fit, help and quit always among them."""

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, show_command_palette=False, **kwargs)
        self._width = 0
        self._drawn: tuple[object, ...] | None = None  # what the keys on show were made from

    def keys(self) -> list[tuple[Binding, bool, str]]:
        """(binding, enabled, tooltip) of the keys to show, in order."""
        actions: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                actions.setdefault(binding.action, (binding, enabled, tooltip))
        order = {b.id: k for k, b in enumerate(self.screen.BINDINGS) if isinstance(b, Binding)}
        ranked = sorted(actions.values(), key=lambda k: order.get(k[0].id, len(order)))
        pinned = [k for k in ranked if k[0].id in PINNED]
        room = self.size.width - sum(self._width_of(k[0]) for k in pinned)
        if self.show_command_palette:
            room -= 14
        shown = []
        for key in ranked:
            if key[0].id in PINNED:
                continue
            width = self._width_of(key[0])
            if width > room:
                break
            shown.append(key)
            room -= width
        return shown + pinned

    def _width_of(self, binding: Binding) -> int:
        key = len(self.app.get_key_display(binding))
        return key + 1 + len(binding.description) + (1 if self.compact else 3)

    async def recompose(self) -> None:
        # Bindings "change" on every focus change: remake the keys only if what they show did.
        drawn = (
            self.compact,
            self.show_command_palette,
            self._bindings_ready and tuple((b, enabled) for b, enabled, _ in self.keys()),
        )
        if drawn != self._drawn:
            self._drawn = drawn
            await super().recompose()

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        for binding, enabled, tooltip in self.keys():
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                disabled=not enabled,
                tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        palette = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette:
            binding = palette.binding
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
            )

    def on_resize(self) -> None:
        if self.size.width == self._width:
            return
        self._width = self.size.width
        roomy = self._width >= ROOMY_FROM
        self.compact = not roomy
        self.show_command_palette = roomy
        self.call_after_refresh(self.recompose)
