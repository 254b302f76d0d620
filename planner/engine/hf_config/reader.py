"""Reading a Hugging Face ``config.json``: typed look-ups that collect every problem by field path.

A multimodal wrapper (Kimi K3, Qwen3-VL, Qwen3.5, Gemma) keeps the language model's figures in
``text_config``; ``ConfigReader`` reads them there first and falls back to the outer object, and
names a field by where it was looked for (``config.text_config.num_key_value_heads``) so a message
points at the key to fix. A key read whose value was non-finite (``finite.finite_config`` replaced it
by ``None``) is refused where it sits: ``config.hidden_size: Must be a finite number (got
Infinity).`` Nothing here guesses: a required key that is missing or not a positive
whole number is recorded in ``errors`` and the caller raises them together as one
``EngineInputError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import is_int
from ..limits import MAX_DIMENSION, MAX_LAYERS
from .finite import FINITE_MESSAGE

# The largest dimension (a PostgreSQL ``integer``: the records' columns) and the most layers a config
# may declare (each layer is walked once, so a hostile count cannot make the import loop for long):
# the engine's own limits (``planner/engine/limits.py``), so an imported record always sizes.


class ConfigReader:
    """Look-ups over one config (``text_config`` first when there is one), errors by field path.

    ``errors`` maps a path such as ``config.num_key_value_heads`` to messages; ``family`` is the
    architecture named in messages (``Required for a qwen3 config.``); ``non_finite`` maps the paths
    where ``finite.finite_config`` replaced a non-finite number to its spelling.
    """

    def __init__(
        self, config: Mapping[str, Any], family: str = "", non_finite: Mapping[str, str] | None = None
    ) -> None:
        self.outer: Mapping[str, Any] = config
        text = config.get("text_config")
        self.text: Mapping[str, Any] | None = text if isinstance(text, Mapping) else None
        self.family = family
        self.errors: dict[str, list[str]] = {}
        self.non_finite: Mapping[str, str] = non_finite or {}
        self.refused: set[str] = set()

    @property
    def prefix(self) -> str:
        """Where the language model's keys are read: ``config.text_config`` or ``config``."""
        return "config.text_config" if self.text is not None else "config"

    def path(self, key: str) -> str:
        """The path a key is reported under."""
        return f"{self.prefix}.{key}"

    def has(self, key: str) -> bool:
        """The key is present and not ``null`` (in ``text_config`` or the outer object)."""
        return self.raw(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        """The value as written (``text_config`` first), or ``default``; a non-finite number is
        refused (an error at its path) and read as ``default``."""
        if self.text is not None:
            if self.text.get(key) is not None:
                return self.text[key]
            if self._refuse(key, f"config.text_config.{key}"):
                return default
        value = self.outer.get(key)
        if value is None and self._refuse(key, f"config.{key}"):
            return default
        return default if value is None else value

    def _refuse(self, key: str, where: str) -> bool:
        """Refuse ``key`` when its value at ``where`` was a non-finite number."""
        if where not in self.non_finite:
            return False
        self.refused.add(key)
        self.errors[where] = [FINITE_MESSAGE.format(value=self.non_finite[where])]
        return True

    def error(self, key: str, message: str) -> None:
        """Record a problem with ``key`` (a path relative to the language model's keys); none for a
        key refused as non-finite (that message says what to fix)."""
        if key in self.refused:
            return
        messages = self.errors.setdefault(self.path(key), [])
        if message not in messages:
            messages.append(message)

    def _required(self) -> str:
        return f"Required for a {self.family} config." if self.family else "Required."

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1, maximum: int = MAX_DIMENSION) -> int:
        """A whole number in ``[minimum, maximum]``; missing: ``default``, or an error (returns 0)."""
        value = self.raw(key)
        if value is None:
            if default is None:
                self.error(key, self._required())
                return 0
            return default
        if not is_int(value) or not minimum <= value <= maximum:
            self.error(key, f"Must be a whole number from {minimum:,} to {maximum:,} (got {_show(value)}).")
            return 0
        return value

    def optional_integer(self, key: str, *, minimum: int = 1, maximum: int = MAX_DIMENSION) -> int | None:
        """A whole number in ``[minimum, maximum]``, or ``None`` when the key is missing or ``null``."""
        if self.raw(key) is None:
            return None
        return self.integer(key, minimum=minimum, maximum=maximum)

    def flag(self, key: str, default: bool = False) -> bool:
        """A ``true``/``false`` flag; missing: ``default``."""
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(key, f"Must be true or false (got {_show(value)}).")
            return default
        return value

    def string(self, key: str, default: str = "") -> str:
        """A string; missing: ``default``."""
        value = self.raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.error(key, f"Must be a string (got {_show(value)}).")
            return default
        return value

    def sequence(self, key: str) -> list[Any] | None:
        """A JSON list, or ``None`` when missing (an error when it is something else)."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self.error(key, f"Must be a list (got {_show(value)}).")
            return None
        if len(value) > MAX_LAYERS:
            self.error(key, f"Lists at most {MAX_LAYERS:,} items.")
            return None
        return value

    def mapping(self, key: str) -> Mapping[str, Any] | None:
        """A JSON object, or ``None`` when missing (an error when it is something else)."""
        value = self.raw(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.error(key, f"Must be an object (got {_show(value)}).")
            return None
        return value


def _show(value: Any) -> str:
    """A short rendering of a bad value for a message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
