"""Everything one process hands to the engine, loaded in one call (workers and the CLI)."""

from __future__ import annotations

import logging
import os

from loaders.encoder import load_encoder
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable
from loaders.quality import load_language_id, load_word_list
from loaders.tokenizer import TokenizerUnavailable, load_model_counter
from longparser.resources import Resources

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
    )
