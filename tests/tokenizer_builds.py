"""Tokenizers built on the spot, for tests and benchmarks: nothing can be downloaded here.

* :func:`train_byte_level_bpe`: a byte-level BPE (GPT-2 family: RoBERTa, Llama 3, Qwen) trained
  with the ``tokenizers`` library on the texts given, its pre-tokenizer one of two regex
  families (GPT-2's, or cl100k's, which glues line breaks to punctuation);
* :func:`write_hf_model`: it as a Hugging Face model directory (``tokenizer.json`` and the
  config file a window is read from);
* :func:`write_tiktoken`: its ranks as a tiktoken BPE file plus a declaration file (pattern,
  special tokens, window), the form ``token_counter`` names;
* :func:`write_st_model`: a sentence-transformers directory around a ``tokenizer.json``;
* :func:`corpus_texts`: texts to train on: this repository's fixture documents, and the
  Python standard library's sources (every Python has them) for a large vocabulary.
"""

from __future__ import annotations

import atexit
import base64
import functools
import json
import shutil
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
END_OF_TEXT = "<|endoftext|>"
# Kept out of every corpus: a reserved evaluation document (the team's guide) that the
# fixtures still hold for converter tests.
EXCLUDED = ("2408.09869",)


def repository_texts() -> Iterator[str]:
    """The texts of the repository's fixture documents (the strings of their JSON), which do
    not change with the code or the docs: the tokenizers trained on them stay the same, and
    so do the examples the property tests keep."""
    files = [ROOT / "examples" / "sample_document.json",
             *sorted((ROOT / "tests" / "fixtures" / "docling").glob("*.json"))]
    for file in files:
        if not any(name in file.name for name in EXCLUDED):
            yield from _strings(json.loads(file.read_text(encoding="utf-8")))


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        if len(node) > 1:
            yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def stdlib_texts(limit_chars: int) -> Iterator[str]:
    """Python standard library sources, in a fixed order, up to ``limit_chars`` characters."""
    total = 0
    for file in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "site-packages" in file.parts or total >= limit_chars:
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        total += len(text)
        yield text


def corpus_texts(stdlib_chars: int = 0) -> list[str]:
    return [*repository_texts(), *stdlib_texts(stdlib_chars)]


def train_byte_level_bpe(texts: Iterable[str], vocab_size: int, pattern: str = GPT2_PATTERN) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` (all 256 bytes in its alphabet)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[END_OF_TEXT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def write_hf_model(tokenizer: Any, directory: Path, window: int) -> Path:
    """``tokenizer`` as a model directory whose ``tokenizer_config.json`` gives its window."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = json.dumps({"model_max_length": window})
    (directory / "tokenizer_config.json").write_text(config, encoding="utf-8")
    return directory


def write_st_model(tokenizer_json: Path, directory: Path, max_seq_length: int, lower: bool = False) -> Path:
    """A sentence-transformers model directory (modules.json, sentence_bert_config.json)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.json").write_bytes(tokenizer_json.read_bytes())
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (directory / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    (directory / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": lower}), encoding="utf-8")
    return directory


def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-ins for bytes, reversed (what ByteLevel writes in a vocabulary)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    characters, extra = list(printable), 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            characters.append(256 + extra)
            extra += 1
    return {chr(char): byte for byte, char in zip(printable, characters, strict=True)}


def write_tiktoken(tokenizer: Any, directory: Path, window: int, pattern: str = "cl100k_base") -> Path:
    """The tokenizer's ranks in tiktoken's format (single bytes first, then merges in order) and
    a declaration file naming the pattern, the special token and the window; returns the
    declaration file (``token_counter`` takes it)."""
    decoder = _byte_decoder()
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    ranks = [bytes(decoder[char] for char in token) for token, _ in vocab if token != END_OF_TEXT]
    ranks.sort(key=lambda token: len(token) != 1)  # stable: bytes, then merges in their order
    directory.mkdir(parents=True, exist_ok=True)
    bpe = directory / "encoding.tiktoken"
    bpe.write_bytes(b"".join(base64.b64encode(token) + b" %d\n" % rank for rank, token in enumerate(ranks)))
    declaration = directory / "encoding.json"
    declaration.write_text(json.dumps({
        "path": bpe.name, "kind": "tiktoken", "window": window,
        "pattern": pattern,
        "special_tokens": {END_OF_TEXT: len(ranks)},
    }), encoding="utf-8")
    return declaration


# --- the tokenizers the tests share (built once per test process) ---------------------------

_BUILD_DIR = Path(tempfile.mkdtemp(prefix="longparser-tokenizers-"))
atexit.register(shutil.rmtree, _BUILD_DIR, True)
TEST_VOCAB = 3000
CL100K_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+"""
                  r"""| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")


@functools.lru_cache(maxsize=1)
def test_corpus() -> tuple[str, ...]:
    return tuple(repository_texts())


@functools.cache
def bpe_model_dir(window: int = 512) -> Path:
    """A GPT-2-pattern byte-level BPE as a Hugging Face model directory (its window in
    tokenizer_config.json)."""
    tokenizer = train_byte_level_bpe(test_corpus(), TEST_VOCAB)
    return write_hf_model(tokenizer, _BUILD_DIR / f"bpe-{window}", window)


@functools.cache
def tiktoken_declaration(window: int = 8191) -> Path:
    """A cl100k-pattern byte-level BPE as a tiktoken file and its declaration file."""
    tokenizer = train_byte_level_bpe(test_corpus(), TEST_VOCAB, CL100K_PATTERN)
    return write_tiktoken(tokenizer, _BUILD_DIR / f"tiktoken-{window}", window)


@functools.cache
def wordpiece_st_dir(max_seq_length: int = 256, lower: bool = False) -> Path:
    """The pinned model's WordPiece tokenizer in a sentence-transformers directory."""
    from loaders.tokenizer import TOKENIZER_FILE

    return write_st_model(TOKENIZER_FILE, _BUILD_DIR / f"st-{max_seq_length}-{lower}", max_seq_length, lower)


@functools.lru_cache(maxsize=1)
def metaspace_tokenizer_file() -> Path:
    """A SentencePiece-style Unigram tokenizer (Metaspace pre-tokenizer: a line break does not
    split words), which no counter but the whole-text one counts exactly."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=800, special_tokens=["<unk>"], unk_token="<unk>",
                                      show_progress=False)
    tokenizer.train_from_iterator(test_corpus(), trainer)
    directory = _BUILD_DIR / "unigram"
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory / "tokenizer.json"


def real_count(reference: Path | str, text: str) -> int:
    """The real tokenizer's count of ``text`` (special tokens as the model adds them), loaded
    apart from the engine: ``encode(text, add_special_tokens=True)``."""
    return _real_counter(str(reference))(text)


@functools.cache
def _real_counter(reference: str) -> Any:
    from tokenizers import Tokenizer

    path = Path(reference)
    if path.suffix == ".json" and json.loads(path.read_text(encoding="utf-8")).get("kind") == "tiktoken":
        import tiktoken

        declaration = json.loads(path.read_text(encoding="utf-8"))
        ranks = {base64.b64decode(token): int(rank) for token, rank in
                 (line.split() for line in (path.parent / declaration["path"]).read_bytes().splitlines())}
        encoding = tiktoken.Encoding("real", pat_str=CL100K_PATTERN if declaration["pattern"] == "cl100k_base"
                                     else declaration["pattern"], mergeable_ranks=ranks,
                                     special_tokens=declaration["special_tokens"])
        return lambda text: len(encoding.encode_ordinary(text))
    file = path / "tokenizer.json" if path.is_dir() else path
    tokenizer = Tokenizer.from_file(str(file))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    lower = False
    if (settings := path / "sentence_bert_config.json").is_file():
        lower = json.loads(settings.read_text(encoding="utf-8")).get("do_lower_case", False)
    return lambda text: len(tokenizer.encode(text.lower() if lower else text, add_special_tokens=True).ids)
