"""Everything one process hands to the engine, loaded in one call (workers and the CLI)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping

from loaders.encoder import load_encoder
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable
from loaders.quality import load_language_id, load_word_list
from loaders.tokenizer import TokenizerUnavailable, load_model_counter
from loaders.tokenizers import load_named
from longparser.resources import Resources
from longparser.tokens import TokenCounter
from schemas.config import ChunkingConfig
from schemas.tokenizers import TokenizerSpec

logger = logging.getLogger(__name__)


def build_resources(
    *,
    word_list_path: str | os.PathLike[str] | None,
    language_id: bool,
    semantic: bool,
    model_path: str | os.PathLike[str] | None = None,
    threads: int = 1,
    strict: bool,
    word_list_required: bool = False,
    language_id_required: bool = False,
    model_counter: bool = True,
    expected_sha256: str = PINNED_SHA256,
    encoder_backend: str = "torch",
    encoder_cache_dir: str | os.PathLike[str] | None = None,
    counters: Mapping[str, TokenCounter] | None = None,
) -> Resources:
    """Load the resources a process hands to the engine.

    Args:
        word_list_path, language_id: the quality resources (None / False: off).
        semantic: load the sentence encoder.
        strict: True (a worker configured for semantic mode): an encoder problem raises
            :class:`~loaders.pinned_model.EncoderUnavailable` so the process refuses to start;
            False: ONE warning is logged and the resources carry ``encoder=None`` plus the
            reason, so results record that semantic mode was unavailable.
        word_list_required, language_id_required: the operator asked for these explicitly,
            so a failure to load them raises instead of turning the check off.
        model_counter: load the model's token counter (for requests with ``token_counter:
            "model"``); a failure is recorded, and each such request is refused with it.
        expected_sha256: the weights pin (tests substitute the digest of a fake file).
        encoder_backend: which runtime embeds (``torch``, ``onnx``, ``onnx-int8``, ``openvino``;
            docs/encoders.md); a backend that cannot load is an encoder problem like any other,
            never a fall-back to torch.
        encoder_cache_dir: where exported backends are kept (None: the user's cache directory).
        counters: tokenizers' counters already loaded, by name (a worker's declared ones, loaded
            before its pool forks: :func:`loaders.tokenizers.load_declared`).

    Raises:
        loaders.errors.ResourceUnavailable: a required resource cannot be loaded.
    """
    counter, counter_error = None, None
    if model_counter:
        try:
            counter = load_model_counter()
        except TokenizerUnavailable as exc:
            counter_error = str(exc)
            logger.warning("token_counter 'model' unavailable: %s", counter_error)
    encoder, encoder_error = None, None
    if semantic:
        try:
            encoder = load_encoder(
                model_path,
                threads=threads,
                expected_sha256=expected_sha256,
                backend=encoder_backend,
                cache_dir=encoder_cache_dir,
                counter=counter,
            )
        except EncoderUnavailable as exc:
            if strict:
                raise
            encoder_error = str(exc)
            logger.warning("semantic boundaries unavailable, packing structurally: %s", encoder_error)
    return Resources(
        model_counter=counter,
        model_counter_error=counter_error,
        word_list=load_word_list(word_list_path, required=word_list_required),
        language_id=load_language_id(required=language_id_required) if language_id else None,
        encoder=encoder,
        encoder_error=encoder_error,
        counters=dict(counters or {}),
    )


def with_tokenizers(config: ChunkingConfig | Mapping[str, object], resources: Resources | None = None,
                    declared: Mapping[str, TokenizerSpec] | None = None) -> Resources:
    """``resources`` plus the counters ``config`` names (library and command line): the
    model's for ``model``, a tokenizer loaded from the path (or the ``declared`` name) that
    ``token_counter`` or ``fit`` gives.

    Raises:
        loaders.tokenizers.TokenizerUnavailable: a named tokenizer cannot be loaded.
        loaders.tokenizer.TokenizerUnavailable: ``model`` without the tokenizers library.
    """
    if not isinstance(config, ChunkingConfig):
        config = ChunkingConfig.model_validate(config)
    resources = resources or Resources()
    named = (config.token_counter, config.fit)
    update: dict[str, object] = {}
    if "model" in named and resources.model_counter is None:
        update["model_counter"] = load_model_counter()
    missing = [name for name in named if name is not None and name not in resources.counters]
    loaded = load_named(missing, declared)
    if loaded:
        update["counters"] = {**resources.counters, **loaded}
    return dataclasses.replace(resources, **update) if update else resources
