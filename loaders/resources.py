"""Everything one process hands to the engine: what to load (:class:`ResourceSpec`), loaded in one
call (:func:`build_resources`). Workers and the command line build their spec from the same
settings with :meth:`ResourceSpec.from_settings`, so the mapping from settings to resources is
written once.

The tokenizers a spec names (the settings' declared ones, a path the command line's request
names) are loaded by :func:`load_tokenizers`: a worker's parent calls it once before its pool
forks and hands the counters to each child's :func:`build_resources`, which otherwise loads them
itself.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from loaders.encoder import load_encoder
from loaders.encoder_backends import resolve_backend
from loaders.pinned_model import PINNED_SHA256, EncoderUnavailable
from loaders.quality import load_language_id, load_word_list
from loaders.tokenizer import TokenizerUnavailable, load_model_counter
from loaders.tokenizers import WordCounter, load_named
from longparser.resources import Resources
from longparser.tokens import TokenCounter
from schemas import ChunkingConfig
from schemas.config import BUILTIN_COUNTERS
from schemas.encoders import PINNED_ENCODER, EncoderSpec, embedding_encoder
from schemas.tokenizers import TokenizerSpec

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
    tokenizers: Mapping[str, TokenizerSpec]
    encoders: Mapping[str, EncoderSpec]

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
        tokenizers: declared tokenizers (``LONGPARSER_TOKENIZERS``: name -> declaration), every
            one required: the operator named it, so one that fails to load is an error.
        tokenizer_paths: the other tokenizers a request names (library and command line only;
            a worker never opens a path a request names): paths, each required; a name that
            no declaration holds is refused when loading.
        encoders: declared encoders (``LONGPARSER_ENCODERS``: name -> declaration), every one
            required where loaded (:mod:`loaders.embedding`): by a worker that holds encoders (a
            semantic worker), by a command for the one its request names.
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
    tokenizers: Mapping[str, TokenizerSpec] = field(default_factory=dict)
    tokenizer_paths: tuple[str, ...] = ()
    encoders: Mapping[str, EncoderSpec] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: ResourceSettings) -> ResourceSpec:
        """A worker's resources: what the operator set explicitly is required (a failure stops
        the worker), what is only on by default is optional; a semantic worker requires its
        encoder; the token counter is optional (only some requests use it); every declared
        tokenizer is required."""
        return cls(
            word_list=_need(settings.word_list_path is not None, settings.explicitly_set("word_list_path")),
            word_list_path=settings.word_list_path,
            language_id=_need(settings.language_id, settings.explicitly_set("language_id")),
            encoder=_need(settings.semantic_enabled, True),
            model_path=settings.model_path,
            encoder_backend=resolve_backend(settings.encoder_backend),
            threads=settings.torch_threads,
            tokenizers=dict(settings.tokenizers),
            encoders=dict(settings.encoders),
        )

    def for_request(self, config: ChunkingConfig) -> ResourceSpec:
        """What a command chunking one request loads: the encoder and the counters its
        ``token_counter`` and ``fit`` name (the model's; a declared tokenizer; any other name as a
        path) when the request asks for them, required (a missing one is an error, never a
        fall-back); the encoder ``embed`` names (the pinned one, or that declaration); the
        quality resources optional (a missing one is a warning and an "off" in the stats)."""
        named = [name for name in dict.fromkeys((config.token_counter, config.fit))
                 if name is not None and name not in BUILTIN_COUNTERS]
        embedding = embedding_encoder(config, self.encoders)
        return dataclasses.replace(
            self,
            word_list=_need(self.word_list != "off", False),
            language_id=_need(self.language_id != "off", False),
            encoder=_need(config.use_semantic_chunking or embedding == PINNED_ENCODER, True),
            model_counter=_need("model" in (config.token_counter, config.fit), True),
            tokenizers={name: self.tokenizers[name] for name in named if name in self.tokenizers},
            tokenizer_paths=tuple(name for name in named if name not in self.tokenizers),
            encoders={name: spec for name, spec in self.encoders.items() if name == embedding},
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


def load_tokenizers(spec: ResourceSpec) -> dict[str, TokenCounter]:
    """The counters of the tokenizers ``spec`` names, by the name requests use: each declared
    one by its name, each path as given.

    Raises:
        loaders.tokenizers.NamedTokenizerUnavailable: one cannot be loaded, or a name is declared
            nowhere (one line, starting with the name).
    """
    return dict(load_named([*spec.tokenizers, *spec.tokenizer_paths], spec.tokenizers))


def _load_counter(need: Need) -> tuple[WordCounter | None, str | None]:
    if need == "off":
        return None, None
    try:
        return load_model_counter(), None
    except TokenizerUnavailable as exc:
        if need == "required":
            raise
        logger.warning("token_counter 'model' unavailable: %s", exc)
        return None, str(exc)


def build_resources(spec: ResourceSpec, tokenizers: Mapping[str, TokenCounter] | None = None) -> Resources:
    """Load what ``spec`` asks for, the token counters first (the cheapest, and a request that
    needs one is refused before anything heavier loads).

    ``tokenizers``: the counters of ``spec``'s tokenizers, already loaded (:func:`load_tokenizers`
    in a worker's parent, before its pool forks); None: they are loaded here.

    A backend that cannot load is an encoder problem like any other, never a fall-back to torch.

    Raises:
        loaders.errors.ResourceUnavailable: a required word list or language ID cannot be loaded.
        loaders.pinned_model.EncoderUnavailable: a required encoder cannot be loaded.
        loaders.tokenizer.TokenizerUnavailable: a required token counter cannot be loaded
            (:class:`loaders.tokenizers.NamedTokenizerUnavailable`: a tokenizer of ``spec``'s).
    """
    counter, counter_error = _load_counter(spec.model_counter)
    counters = dict(tokenizers) if tokenizers is not None else load_tokenizers(spec)
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
        counters=counters,
    )
