"""Equation detection (SPEC 3.1). PLACEHOLDER: replaced by the full scorer."""

from __future__ import annotations

EQUATION_THRESHOLD = 2.0


def equation_score(text: str, previous_text: str | None = None) -> float:
    """Score how equation-like ``text`` is; ``previous_text`` is the preceding block's text."""
    return 0.0


def looks_like_equation(text: str, previous_text: str | None = None) -> bool:
    """True when :func:`equation_score` reaches :data:`EQUATION_THRESHOLD`."""
    return equation_score(text, previous_text) >= EQUATION_THRESHOLD
