"""Token counters for tests: any ``text -> int`` function as the engine's counter."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from longparser.tokens import bisect_prefix


class CallableCounter:
    """A plain ``text -> int`` function as a counter: not additive, so joined texts are counted."""

    additive = False

    def __init__(self, function: Callable[[str], int], name: str | None = None) -> None:
        self.function = function
        self.name = name or getattr(function, "__name__", "custom")

    def measure(self, texts: Sequence[str]) -> list[int]:
        return list(map(self.function, texts))

    def count_joined(self, text: str, units: Sequence[int]) -> int:
        return self.function(text)

    def fitting_prefix(self, text: str, budget: int) -> int:
        return bisect_prefix(self, text, budget)
