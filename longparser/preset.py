"""One request's counter and budget: the ``fit`` preset, the tokenizer's window, the reserve.

``fit`` names a tokenizer (``model``, a declared name, a path the caller loaded) and expands
to the recommended settings for it (:func:`schemas.config.fit_config`): strict mode, that
counter, ``max_tokens = min(window, FIT_MAX_TOKENS)`` (256) and
:data:`schemas.config.FIT_SETTINGS`, fields set explicitly winning except those that would
undo the fit (:func:`schemas.config.fit_refusal`). In strict mode ``max_tokens`` may not
exceed the counter's window (:func:`schemas.config.above_window`, the one window rule):
chunks would then be cut by the model, silently. A chunk counts at most
``max_tokens - reserve_tokens``, the room left for a prefix the embedder adds.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from longparser.errors import RequestRefused
from longparser.resources import Resources, select_counter
from longparser.tokens import TokenCounter
from schemas.config import ChunkingConfig, fit_config, fit_refusal, known_window, strict_window_refusal
from schemas.problems import describe_validation_error


def counter_window(name: str, counter: TokenCounter) -> int | None:
    """The window of ``counter`` in tokens (special tokens included); None: it has none."""
    window = getattr(counter, "window", None)
    return known_window(name) if window is None else window


def resolve(config: ChunkingConfig, resources: Resources) -> tuple[ChunkingConfig, TokenCounter]:
    """The config as it applies (the preset expanded) and its counter.

    Raises:
        RequestRefused: the named tokenizer is not held, an explicit field would undo the fit,
            the preset and the explicit fields do not make a valid config, or strict mode asks for
            chunks larger than the window.
    """
    if config.fit is not None:
        window = counter_window(config.fit, select_counter(config.fit, resources))
        if window is None:
            raise RequestRefused(f"fit {config.fit!r}: this counter has no window to fit")
        refusal = fit_refusal(config, window)
        if refusal:
            raise RequestRefused(refusal)
        try:
            config = fit_config(config, window)
        except ValidationError as exc:
            problems = describe_validation_error(exc)
            raise RequestRefused(f"fit {config.fit!r} (window {window}): {problems}") from None
    counter = select_counter(config.token_counter, resources)
    refusal = strict_window_refusal(config, counter_window(config.token_counter, counter))
    if refusal:
        raise RequestRefused(refusal)
    return config, counter


def expanded(fit: str | None, config: ChunkingConfig) -> dict[str, Any] | None:
    """What a result's stats echo of a preset: ``fit`` and every field it expanded to."""
    if fit is None:
        return None
    return {"fit": fit, **config.model_dump(mode="json", exclude={"fit"})}
