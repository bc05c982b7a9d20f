"""Fixtures of the controlled group: fresh blocks per test, fake fastText / word list, stub SDK.

Every factory builds new objects on each call, so no test can leak a mutation into another;
tests that chunk also assert the caller's blocks are unchanged.
"""

from __future__ import annotations

import itertools
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import pytest

from longparser.resources import Resources

BlockFactory = Callable[..., dict[str, Any]]


@pytest.fixture
def make_block() -> BlockFactory:
    """Factory of block dicts in LongParser's dump shape; ids b1, b2, ... in call order."""
    counter = itertools.count(1)

    def factory(
        text: str = "",
        type: str = "paragraph",
        *,
        page: int = 1,
        path: Sequence[str] = ("Intro",),
        confidence: float = 1.0,
        block_id: str | None = None,
        table: dict[str, Any] | None = None,
        heading_level: int | None = None,
    ) -> dict[str, Any]:
        n = next(counter)
        return {
            "block_id": block_id or f"b{n}",
            "type": type,
            "text": text,
            "order_index": n - 1,
            "heading_level": heading_level,
            "indent_level": 0,
            "hierarchy_path": list(path),
            "provenance": {"source_file": "doc.pdf", "page_number": page, "bbox": None},
            "confidence": {"overall": confidence},
            "table": table,
        }

    return factory


def words(n: int, word: str = "alpha") -> str:
    """A sentence of ``n`` whitespace words (the word estimate: ``int(n * 1.33)`` tokens)."""
    return " ".join([word] * n)


class FakeLanguageId:
    """Stands in for fastText: a fixed answer, or an exception to exercise the fallback."""

    def __init__(self, language: str = "en", confidence: float = 0.99, error: Exception | None = None):
        self.language, self.confidence, self.error = language, confidence, error
        self.calls: list[str] = []

    def predict(self, text: str) -> tuple[str, float]:
        self.calls.append(text)
        if self.error is not None:
            raise self.error
        return self.language, self.confidence


@pytest.fixture
def fake_language_id() -> type[FakeLanguageId]:
    return FakeLanguageId


@pytest.fixture
def fake_word_list() -> frozenset[str]:
    """A tiny dictionary standing in for /usr/share/dict/words."""
    return frozenset(
        [
            'the', 'a', 'of', 'and', 'to', 'in', 'is', 'it', 'for', 'on', 'with', 'as', 'this',
            'that', 'be', 'are', 'table', 'row', 'data', 'value', 'alpha', 'beta', 'gamma',
            'model', 'results', 'show', 'report', 'section', 'page', 'list', 'item',
        ]
    )


@pytest.fixture
def fake_resources(fake_word_list: frozenset[str]) -> Resources:
    """Word list + confident English language ID, no encoder."""
    return Resources(word_list=fake_word_list, language_id=FakeLanguageId())


class _StubSentenceTransformer:
    """The fake SDK's model: fixed 2-D vectors looked up by text (unknown text -> [1, 0])."""

    vectors: ClassVar[dict[str, list[float]]] = {}
    instances: ClassVar[list[_StubSentenceTransformer]] = []

    def __init__(self, model_name_or_path: str, *args: Any, **kwargs: Any) -> None:
        self.model_name_or_path = model_name_or_path
        self.kwargs = kwargs
        self.encode_calls: list[list[str]] = []
        type(self).instances.append(self)

    def encode(self, sentences: Sequence[str], **kwargs: Any) -> Any:
        import numpy as np

        self.encode_calls.append(list(sentences))
        return np.array([self.vectors.get(s, [1.0, 0.0]) for s in sentences], dtype=np.float32)

    def get_sentence_embedding_dimension(self) -> int:
        return 2


@pytest.fixture
def stub_sentence_transformers() -> Iterator[type[_StubSentenceTransformer]]:
    """Inject fake ``sentence_transformers`` and ``torch`` modules (sys.modules) for the production
    loader, which imports both.

    Set ``stub.vectors[text] = [x, y]`` to choose each text's embedding; ``stub.torch_threads``
    records the loader's ``torch.set_num_threads`` calls. The real modules (if any) are restored
    afterwards.
    """
    stub_cls = type("SentenceTransformer", (_StubSentenceTransformer,),
                    {"vectors": {}, "instances": [], "torch_threads": []})
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = stub_cls  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    torch.set_num_threads = stub_cls.torch_threads.append  # type: ignore[attr-defined]
    saved = {name: sys.modules.get(name) for name in ("sentence_transformers", "torch")}
    sys.modules.update({"sentence_transformers": module, "torch": torch})
    try:
        yield stub_cls
    finally:
        for name, original in saved.items():
            if original is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = original
