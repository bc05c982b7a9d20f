"""Everything one process hands to the engine: what to load (:class:`ResourceSpec`), loaded in one
call (:func:`build_resources`). Workers and the command line build their spec from the same
settings with :meth:`ResourceSpec.from_settings`, so the mapping from settings to resources is
written once.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Literal, Protocol

from loaders.encoder import load_encoder
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable
from loaders.quality import load_language_id, load_word_list
from loaders.tokenizer import ModelTokenCounter, TokenizerUnavailable, load_model_counter
from longparser.resources import Resources
from schemas import ChunkingConfig

logger = logging.getLogger(__name__)

# How much a process needs a resource: "off" (not loaded), "optional" (a failure is logged once
# and recorded: results say the resource was off) or "required" (a failure raises).
Need = Literal["off", "optional", "required"]


class ResourceSettings(Protocol):
    """The settings a spec is built from (``config.settings.Settings``; loaders sit below config)."""

    word_list_path: str | None
    language_id: bool
    semantic_enabled: bool
    model_path: str | None
    torch_threads: int
    encoder_backend: str

    def explicitly_set(self, name: str) -> bool: ...


def _need(wanted: bool, required: bool) -> Need:
    return "off" if not wanted else "required" if required else "optional"


@dataclass(frozen=True)
class ResourceSpec:
    """What one process loads for the engine, and how much it needs each part.

    Attributes:
        word_list: the quality score's word list, read from ``word_list_path``.
        language_id: fastText language identification.
        encoder: the pinned sentence encoder (semantic boundaries), run by ``encoder_backend``
            with ``threads`` threads from ``model_path`` (None: the model package's copy); an
            optional encoder that fails is recorded in ``Resources.encoder_error``.
        model_counter: the model's token counter (requests with ``token_counter: "model"``);
            an optional one that fails is recorded, and each request that needs it is refused.
        expected_sha256: the weights pin (tests substitute the digest of a fake file).
        encoder_cache_dir: where exported backends are kept (None: the user's cache directory).
    """

    word_list: Need = "off"
    word_list_path: str | os.PathLike[str] | None = None
    language_id: Need = "off"
    encoder: Need = "off"
    model_path: str | os.PathLike[str] | None = None
    encoder_backend: str = "torch"
    threads: int = 1
    model_counter: Need = "optional"
    expected_sha256: str = PINNED_SHA256
    encoder_cache_dir: str | os.PathLike[str] | None = None

    @classmethod
    def from_settings(cls, settings: ResourceSettings) -> ResourceSpec:
        """A worker's resources: what the operator set explicitly is required (a failure stops
        the worker), what is only on by default is optional; a semantic worker requires its
        encoder; the token counter is optional (only some requests use it)."""
        return cls(
            word_list=_need(settings.word_list_path is not None, settings.explicitly_set("word_list_path")),
            word_list_path=settings.word_list_path,
            language_id=_need(settings.language_id, settings.explicitly_set("language_id")),
            encoder=_need(settings.semantic_enabled, True),
            model_path=settings.model_path,
            encoder_backend=settings.encoder_backend,
            threads=settings.torch_threads,
        )

    def for_request(self, config: ChunkingConfig) -> ResourceSpec:
        """What a command chunking one request loads: the encoder and the token counter when the
        request asks for them, required (a missing one is an error, never a fall-back); the
        quality resources optional (a missing one is a warning and an "off" in the stats)."""
        return dataclasses.replace(
            self,
            word_list=_need(self.word_list != "off", False),
            language_id=_need(self.language_id != "off", False),
            encoder=_need(config.use_semantic_chunking, True),
            model_counter=_need(config.token_counter == "model", True),
        )

    def required_quality(self) -> ResourceSpec:
        """Only the quality resources this spec requires: what a worker parent loads before it
        forks, to refuse to start (the encoder is checked without being loaded)."""
        return ResourceSpec(
            word_list="required" if self.word_list == "required" else "off",
            word_list_path=self.word_list_path,
            language_id="required" if self.language_id == "required" else "off",
            model_counter="off",
        )


def _load_counter(need: Need) -> tuple[ModelTokenCounter | None, str | None]:
    if need == "off":
        return None, None
    try:
        return load_model_counter(), None
    except TokenizerUnavailable as exc:
        if need == "required":
            raise
        logger.warning("token_counter 'model' unavailable: %s", exc)
        return None, str(exc)


def build_resources(spec: ResourceSpec) -> Resources:
    """Load what ``spec`` asks for, the token counter first (the cheapest, and a request that
    needs it is refused before anything heavier loads).

    A backend that cannot load is an encoder problem like any other, never a fall-back to torch.

    Raises:
        loaders.errors.ResourceUnavailable: a required word list or language ID cannot be loaded.
        loaders.pinned_model.EncoderUnavailable: a required encoder cannot be loaded.
        loaders.tokenizer.TokenizerUnavailable: a required token counter cannot be loaded.
    """
    counter, counter_error = _load_counter(spec.model_counter)
    encoder, encoder_error = None, None
    if spec.encoder != "off":
        try:
            encoder = load_encoder(
                spec.model_path,
                threads=spec.threads,
                expected_sha256=spec.expected_sha256,
                backend=spec.encoder_backend,
                cache_dir=spec.encoder_cache_dir,
                counter=counter,
            )
        except EncoderUnavailable as exc:
            if spec.encoder == "required":
                raise
            encoder_error = str(exc)
            logger.warning("semantic boundaries unavailable, packing structurally: %s", encoder_error)
    word_list_path = spec.word_list_path if spec.word_list != "off" else None
    return Resources(
        model_counter=counter,
        model_counter_error=counter_error,
        word_list=load_word_list(word_list_path, required=spec.word_list == "required"),
        language_id=load_language_id(required=spec.language_id == "required") if spec.language_id != "off"
        else None,
        encoder=encoder,
        encoder_error=encoder_error,
    )
