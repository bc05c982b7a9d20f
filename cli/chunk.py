"""``longparser chunk``: run the engine on a local file and print (or write) the result.

Usage: ``longparser chunk INPUT [--format F] [-c CONFIG] [-o OUT.json] [--document-id ID] [--max-tokens N]
[--min-tokens N] [--token-counter COUNTER] [--fit TOKENIZER] [--reserve-tokens N] [--strict]
[--heading-context] [--semantic] [--summary]``.

* INPUT is a JSON list of blocks, a ChunkRequest object, a LongParser Document dump
  (:func:`schemas.parse_input` accepts all three) or a docling ``DoclingDocument``, converted
  here by :mod:`loaders.docling` (docling-core, the ``[docling]`` extra); a ``.md`` /
  ``.markdown`` file is Markdown and a ``.txt`` file plain text, converted here by
  :mod:`loaders.markdown`; ``-`` reads standard input (JSON); ``--format json|markdown|text``
  reads INPUT as that whatever its name (:func:`format_of`). The document id is
  ``--document-id``, else the input's (a DoclingDocument's ``name``, unless it is docling's
  default ``"Document"``), else the file name's (fitted to the wire pattern:
  :func:`schemas.inputs.document_id_from_name`; ``notes.md`` -> ``notes``), else ``stdin`` for
  ``chunk -`` (``submit -`` needs an id).
* Config, lowest to highest precedence: the input's own ``config``, ``-c`` (a JSON file or an
  inline JSON object, :mod:`cli.json_input`), then the flags (``--max-tokens``, ``--min-tokens``,
  ``--token-counter``, ``--fit``, ``--reserve-tokens``, ``--strict``, ``--heading-context``,
  ``--semantic``).
* The result is printed as JSON (``indent=2``, keys in the schema's order), or written to OUT
  atomically: a temporary file in OUT's directory, then ``os.replace`` - a reader never sees a
  partial file, and on any error no file is created.
* ``--summary`` prints :func:`format_summary` instead of the JSON (with ``-o`` the JSON still
  goes to OUT); for a DoclingDocument it also prints the conversion report (pictures counted,
  items skipped) as one line on stderr, so stdout holds only the summary.

Exit status: 0 success; 2 bad input (missing, empty or unreadable file, not JSON, wrong shape,
invalid field, bad config, a DoclingDocument docling-core cannot read or docling-core missing,
invalid ``LONGPARSER_*`` settings) or a request that cannot be served as asked (``--token-counter
model`` without the tokenizer, ``--semantic`` without the model), with one line on stderr and no
traceback; 1 the output file could not be written.

Warnings go to stderr, one line each (``longparser chunk: warning: ...``; :mod:`cli.main` sets
that up for the loaders' and the engine's log records): a missing optional resource (a word
list LONGPARSER_WORD_LIST_PATH names, the language ID; a missing *default* word list is said
only in ``--summary``'s header: :func:`missing_default_word_list`), an input without blocks
(0 chunks). Semantic mode and the model's token
counter are different: the user asked for them by name, so a missing model or tokenizer is an
error (exit 2, the message says what to install), never a silent fall-back - as a semantic
worker refuses to start without its model. The library keeps the fall-back (``chunk_blocks``
without an encoder packs structurally and says so in ``stats.semantic``).

Resources: what the settings name (:meth:`loaders.resources.ResourceSpec.from_settings`, as a
worker reads them), narrowed to what the request needs (:meth:`~loaders.resources.ResourceSpec.for_request`):
the word list and the fastText language ID (optional here), the counters ``token_counter`` and
``fit`` name (the model's; a tokenizer the settings declare by name, or one from a path) and the
encoder (only for semantic mode). Everything heavy is imported inside the functions that need
it, so ``--help`` and input errors return at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

from cli.json_input import STDIN, config_fields, load_json, read_text
from longparser.resources import Resources
from schemas import ChunkingConfig, ChunkRequest, ChunkResult, InputError
from schemas.inputs import document_id_from_name, is_docling_input, parse_input

logger = logging.getLogger(__name__)
EXIT_OK, EXIT_WRITE_FAILED, EXIT_BAD_INPUT = 0, 1, 2
# INPUT formats (``--format``); AUTO chooses by the file's extension (:func:`format_of`)
AUTO, JSON, MARKDOWN, TEXT = "auto", "json", "markdown", "text"
INPUT_FORMATS = (AUTO, JSON, MARKDOWN, TEXT)
STDIN_DOCUMENT_ID = "stdin"  # ``chunk -`` of an input without an id (``submit -`` refuses instead)
SUMMARY_WORDS = 8
SUMMARY_CHARS = 80  # a summary line's preview: this many characters at most (one long word is cut)
# Command-line flag (argparse dest) -> ChunkingConfig field; a flag left unset changes nothing.
CONFIG_FLAGS = {
    "max_tokens": "max_tokens",
    "min_tokens": "min_tokens",
    "token_counter": "token_counter",
    "fit": "fit",
    "reserve_tokens": "reserve_tokens",
    "strict": "strict_max_tokens",
    "heading_context": "heading_context",
    "semantic": "use_semantic_chunking",
    "embed": "embed",
}


def document_id_from_path(path: str | os.PathLike[str]) -> str:
    """A document id from a file name, fitted to ``schemas.requests.DOCUMENT_ID_PATTERN``.

    ``"Q3 report (final).json"`` -> ``"Q3-report-final-"``; nothing usable -> ``"document"``
    (see :func:`schemas.inputs.document_id_from_name`). ``paper.docling.json`` -> ``paper``.
    """
    name = Path(path).name
    stem = name.removesuffix(".json") if name.endswith(".json") else Path(path).stem
    return document_id_from_name(stem.removesuffix(".docling")) or "document"


def _one_line(message: str) -> str:
    return " ".join(message.split())


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields ``-c`` and the flags set, flags last (so they win)."""
    overrides: dict[str, Any] = {}
    if getattr(args, "config", None):
        overrides.update(config_fields(args.config))
    for flag, field in CONFIG_FLAGS.items():
        value = getattr(args, flag, None)
        if value is not None and value is not False:  # store_true flags: False means "not given"
            overrides[field] = value
    return overrides


@dataclasses.dataclass(frozen=True)
class LoadedInput:
    """A validated request, and the docling conversion's report when the input was a DoclingDocument."""

    request: ChunkRequest
    docling_report: Any = None


def load_input(args: argparse.Namespace) -> LoadedInput:
    """Validate INPUT (+ ``-c`` config and the config flags) into a ChunkRequest.

    Raises:
        InputError: with a one-line message naming the file, or the block index and field.
    """
    overrides = config_overrides(args)
    input_format = getattr(args, "format", None) or AUTO
    text_converter = markdown_converter(args.input, input_format)
    data = read_text(args.input, "input") if text_converter else _load_json_input(args.input, input_format)
    reports: list[Any] = []

    def convert(document: Any) -> list[Any]:
        from loaders.docling import DoclingInputError, DoclingNotInstalledError, convert_docling

        try:
            conversion = convert_docling(document)
        except (DoclingNotInstalledError, DoclingInputError) as exc:
            raise InputError(f"input {args.input}: {exc}") from None
        reports.append(conversion.report)
        return conversion.blocks

    request = parse_input(
        data,
        default_document_id=_default_document_id(args),
        document_id=getattr(args, "document_id", None),
        config_overrides=overrides,
        docling=convert if is_docling_input(data) else None,
        text_converter=text_converter,
    )
    return LoadedInput(request, reports[0] if reports else None)


def _default_document_id(args: argparse.Namespace) -> str | None:
    """The id of an input that carries none: its file name's; ``stdin`` for ``chunk -``."""
    if args.input != STDIN:
        return document_id_from_path(args.input)
    return STDIN_DOCUMENT_ID if getattr(args, "command", "chunk") == "chunk" else None


def format_of(path: str, input_format: str = AUTO) -> str:
    """What INPUT is read as: ``--format`` when given, else by the file's suffix (any case):
    ``.md``/``.markdown`` Markdown, ``.txt`` plain text, anything else - standard input too - JSON."""
    from loaders.markdown import MARKDOWN_SUFFIXES, TEXT_SUFFIXES

    if input_format != AUTO:
        return input_format
    suffix = Path(path).suffix.lower() if path != STDIN else ""
    return MARKDOWN if suffix in MARKDOWN_SUFFIXES else TEXT if suffix in TEXT_SUFFIXES else JSON


def format_rule() -> str:
    """How INPUT's format is chosen, in words (for help and for the "not valid JSON" error)."""
    from loaders.markdown import MARKDOWN_SUFFIXES, TEXT_SUFFIXES

    return (f"a file is read by its extension ({', '.join(MARKDOWN_SUFFIXES)}: Markdown; "
            f"{', '.join(TEXT_SUFFIXES)}: plain text; any other: JSON) and standard input as JSON")


def markdown_converter(path: str, input_format: str = AUTO) -> Any:
    """The converter of a Markdown or plain-text INPUT (:func:`format_of`); None for JSON."""
    from loaders.markdown import blocks_from_markdown, blocks_from_text

    chosen = format_of(path, input_format)
    source = Path(path).name if path != STDIN else None
    if chosen == MARKDOWN:
        return lambda text: blocks_from_markdown(text, source_file=source)
    if chosen == TEXT:
        return lambda text: blocks_from_text(text, source_file=source)
    return None


def _load_json_input(path: str, input_format: str) -> Any:
    """INPUT decoded as JSON; when the format was guessed, a "not valid JSON" error says how it
    was guessed and how to read Markdown or text instead (a newcomer pipes Markdown to ``-``)."""
    try:
        return load_json(path, "input")
    except InputError as exc:
        if input_format != AUTO or ": not valid JSON: " not in str(exc):
            raise
        raise InputError(f"{exc}; {format_rule()}: --format markdown or --format text reads it as "
                         "Markdown or plain text") from None


def load_request(args: argparse.Namespace) -> ChunkRequest:
    """:func:`load_input`'s request (``submit`` and the demo need no conversion report)."""
    return load_input(args).request


def warn_if_empty(command: str, request: ChunkRequest) -> None:
    """An input without blocks is valid (0 chunks) but rarely meant: say so on stderr."""
    if not request.blocks:
        print(f"longparser {command}: warning: input has no blocks: the result has 0 chunks", file=sys.stderr)


def _settings() -> Any:
    """``config.settings.get_settings()``, invalid settings as an :class:`InputError` (one line)."""
    from config.settings import SettingsError, get_settings

    try:
        return get_settings()
    except SettingsError as exc:
        raise InputError(f"settings (LONGPARSER_* environment / .env): {exc}") from None


def local_tokenizer_paths(config: ChunkingConfig, declared: Collection[str]) -> ChunkingConfig:
    """``chunk`` reads local files: a name-shaped ``token_counter`` or ``fit`` (``mytok``) that
    ``declared`` (LONGPARSER_TOKENIZERS) does not hold but that is a file or directory here is
    that path, written ``./mytok`` (so the result's ``stats.config`` says a path was read).

    A declared name stays the declared tokenizer even where such a directory exists: it is what
    the workers load for ``submit``, and both commands must give the same chunks; the
    directory is then one warning away (``./mytok``). Requests to workers never open paths:
    ``submit`` does not call this.
    """
    from schemas.config import BUILTIN_COUNTERS, is_tokenizer_name

    updates: dict[str, str] = {}
    for field in ("token_counter", "fit"):
        reference = getattr(config, field)
        if reference is None or reference in BUILTIN_COUNTERS or not is_tokenizer_name(reference):
            continue
        if not os.path.exists(reference):
            continue
        if reference in declared:
            logger.warning("%s %r is the tokenizer LONGPARSER_TOKENIZERS declares, not the %s %r here "
                           "(%s names that one)", field, reference,
                           "directory" if os.path.isdir(reference) else "file", reference,
                           os.path.join(os.curdir, reference))
            continue
        updates[field] = os.path.join(os.curdir, reference)
    return config.model_copy(update=updates) if updates else config


def missing_default_word_list(settings: Any) -> str | None:
    """The word list's path when it is only the default (LONGPARSER_WORD_LIST_PATH unset) and
    no file is there, else None.

    That is a property of the machine, not of the request: ``chunk`` leaves the word list off
    without a warning on every run, ``--summary`` says it in its header (where the quality
    scores show) and the result's ``stats.resources.word_list`` is false. A path set explicitly
    is loaded as asked, and warned about when it cannot be read; an empty one turns it off.
    """
    path = settings.word_list_path
    if path is None or settings.explicitly_set("word_list_path") or Path(path).is_file():
        return None
    return str(path)


def load_resources(config: ChunkingConfig) -> Resources:
    """The resources the settings name, narrowed to what ``config`` needs
    (:meth:`~loaders.resources.ResourceSpec.for_request`): word list and language ID (optional:
    a missing one is one warning and an "off" in ``stats.resources``), the counters
    ``token_counter`` and ``fit`` name (the model's, a declared tokenizer, one from a path), the
    encoder (``use_semantic_chunking``).

    Raises:
        InputError: invalid ``LONGPARSER_*`` settings.
        longparser.errors.RequestRefused: a token counter or the encoder the request asks for
            cannot be loaded; the message says what to install or what is wrong with the
            tokenizer. The counters are checked first, before anything heavier loads.
    """
    from loaders.pinned_model import EncoderUnavailable
    from loaders.resources import ResourceSpec, build_resources
    from loaders.tokenizer import TokenizerUnavailable
    from loaders.tokenizers import NamedTokenizerUnavailable
    from longparser.errors import RequestRefused
    from longparser.resources import select_counter

    settings = _settings()
    spec = ResourceSpec.from_settings(settings).for_request(config)
    if missing_default_word_list(settings) is not None:
        spec = dataclasses.replace(spec, word_list="off")
    try:
        return build_resources(spec)
    except NamedTokenizerUnavailable as exc:
        raise RequestRefused(str(exc)) from None
    except TokenizerUnavailable as exc:
        select_counter("model", Resources(model_counter_error=str(exc)))  # the engine's words
        raise RequestRefused(str(exc)) from None  # pragma: no cover - select_counter raised above
    except EncoderUnavailable as exc:
        wanted = "semantic chunking" if config.use_semantic_chunking else "embed"
        raise RequestRefused(f"{wanted} needs the embedding model, which cannot be loaded: {exc}") from None


def load_embedder(config: ChunkingConfig, resources: Resources) -> Any:
    """The encoder ``config``'s ``embed`` names (None without ``embed``): the pinned model
    :func:`load_resources` loaded, or the one LONGPARSER_ENCODERS declares by that name, loaded here.

    Raises:
        longparser.errors.RequestRefused: a name nothing declares, or an encoder that cannot be loaded.
    """
    from loaders.embedding import declared_refusal, load_declared_encoder, pinned_embedder
    from loaders.pinned_model import EncoderUnavailable, default_model_path
    from longparser.errors import RequestRefused
    from schemas.encoders import PINNED_ENCODER, embedding_encoder

    settings = _settings()
    name = embedding_encoder(config, settings.encoders)
    if name is None:
        return None
    if name == PINNED_ENCODER:
        if resources.encoder is None:  # load_resources loads it for such a request, or refuses
            raise RequestRefused(f"embed {name!r}: the model is not loaded")
        model_dir = Path(settings.model_path) if settings.model_path else default_model_path()
        return pinned_embedder(resources.encoder, model_dir)
    if name not in settings.encoders:
        raise RequestRefused(declared_refusal(name, settings.encoders))
    try:
        return load_declared_encoder(name, settings.encoders[name], threads=settings.torch_threads)
    except EncoderUnavailable as exc:
        raise RequestRefused(str(exc)) from None


def result_json(result: ChunkResult) -> str:
    """The result as pretty JSON text (UTF-8 kept readable), newline-terminated."""
    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def _new_file_mode(target: Path) -> int:
    """The mode a plain ``open(target, "w")`` would leave: the existing file's, else 0666 - umask.

    ``mkstemp`` creates 0600 files; without this the result would become unreadable to the
    group/others who could read the file it replaced.
    """
    try:
        return target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one.

    The temporary file lives in the target's directory (``os.replace`` is atomic only within
    one file system) and is removed on any failure, so an error never leaves a file behind.
    """
    target = Path(path)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, _new_file_mode(target))
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _first_words(text: str, n: int = SUMMARY_WORDS, limit: int = SUMMARY_CHARS) -> str:
    """The first ``n`` words, at most ``limit`` characters (a longer word is cut), ``…`` when cut."""
    words = text.split()
    preview = " ".join(words[:n])
    if len(preview) > limit:
        return preview[:limit].rstrip() + "…"
    return preview + (" …" if len(words) > n else "")


def _pages(pages: list[int]) -> str:
    return ",".join(str(p) for p in pages) or "-"


def format_summary(result: ChunkResult, missing_word_list: str | None = None) -> str:
    """A readable summary: a header line, then one line per chunk.

    Header: document id, blocks in, blocks excluded (by reason), chunks out, the default word
    list's path when it is missing (:func:`missing_default_word_list`), and the semantic
    outcome when it was requested. Chunk lines: index, chunk_type, pages, token count, quality
    score and the first words of the text (whitespace collapsed, at most 80 characters).
    """
    stats = result.stats
    excluded = sum(stats.blocks_excluded.values())
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(stats.blocks_excluded.items()))
    header = (
        f"document {result.document_id}: {stats.blocks_in} blocks in, {excluded} excluded"
        f"{f' ({reasons})' if reasons else ''}, {len(result.chunks)} chunks out"
    )
    if missing_word_list is not None:
        header += (f"; quality scores without the dictionary check (no word list at {missing_word_list}: "
                   "LONGPARSER_WORD_LIST_PATH names one)")
    if stats.semantic.requested:
        semantic = stats.semantic
        header += (
            f"; semantic: {semantic.boundaries} boundaries"
            if semantic.available
            else f"; semantic: unavailable ({semantic.reason or 'no encoder'})"
        )
    lines = [header]
    for index, chunk in enumerate(result.chunks):
        lines.append(
            f"{index:>3}  {chunk.chunk_type:<12}  p{_pages(chunk.page_numbers):<8}  "
            f"{chunk.token_count:>5} tok  q={chunk.quality_score:.2f}  {_first_words(chunk.text)}"
        )
    return "\n".join(lines) + "\n"


def format_docling_report(report: Any) -> str:
    """One line: what the DoclingDocument conversion made of the document."""
    def counts(values: dict[str, int]) -> str:
        return ", ".join(f"{name} {count}" for name, count in sorted(values.items()))

    blocks = sum(report.blocks_by_type.values())
    line = (f"docling conversion: {report.pages} pages, {blocks} blocks ({counts(report.blocks_by_type)}), "
            f"{report.pictures} pictures (no block; captions kept)")
    if report.skipped:
        line += f", items skipped: {counts(report.skipped)}"
    if report.missing_prov:
        line += f", {report.missing_prov} blocks without provenance (page of the block before)"
    return line


def _error(message: str) -> None:
    print(f"longparser chunk: error: {_one_line(message)}", file=sys.stderr)


def run_chunk(args: argparse.Namespace) -> int:
    """Run ``longparser chunk`` for parsed arguments; returns the exit status."""
    from loaders.embedding import embed_result, reserve_for_prefix
    from longparser.errors import RequestRefused
    from longparser.pipeline import chunk_blocks

    try:
        loaded = load_input(args)
        request = loaded.request
        config = local_tokenizer_paths(request.config, _settings().tokenizers)
        resources = load_resources(config)
        embedder = load_embedder(config, resources)
        if embedder is not None:
            config = reserve_for_prefix(config, embedder)
        warn_if_empty("chunk", request)
        result = chunk_blocks(request.blocks, config, resources, document_id=request.document_id)
        if embedder is not None:
            embed_result(result, embedder)
    except (InputError, RequestRefused) as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    if args.output:
        try:
            write_atomic(args.output, result_json(result))
        except OSError as exc:
            _error(f"cannot write {args.output}: {exc.strerror or exc}")
            return EXIT_WRITE_FAILED
    if args.summary:
        if loaded.docling_report is not None:
            print(f"longparser chunk: {format_docling_report(loaded.docling_report)}", file=sys.stderr)
        sys.stdout.write(format_summary(result, missing_default_word_list(_settings())))
    elif not args.output:
        sys.stdout.write(result_json(result))
    return EXIT_OK
