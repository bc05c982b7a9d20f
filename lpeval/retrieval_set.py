"""The real-document retrieval set (``eval/retrieval_v1``): its documents, split and questions.

A set directory holds ``split.json`` (``{"dev": [ids], "test": [ids]}``), a questions file
(``{"version", "documents": [{"id", "file", "format", "title", "questions": [{"id", "kind",
"question", "answer", "rationale"}]}]}``) and the docling JSON files it names. This module reads
them and gives each document's text in the two forms chunkers start from:

* :func:`document_units`: what the project's docling converter (:mod:`loaders.docling`) makes
  of the document, one text per block and, for a table, one per cell. Answer strings are
  written against these units (the text of one block or of one cell), so a chunker that keeps a
  block or a cell whole can hold every answer.
* :func:`markdown_export`: docling-core's own Markdown export, what the Markdown-based
  chunkers read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUESTION_KINDS = ("prose", "table", "list", "section")
SPLITS = ("dev", "test")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SET = ROOT / "eval" / "retrieval_v1"
QUESTIONS_FILE = "questions_v1.json"


class RetrievalSetError(ValueError):
    """The set's files are missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    question: str
    answer: str
    rationale: str


@dataclass(frozen=True)
class SetDocument:
    id: str
    path: Path
    format: str
    title: str
    questions: tuple[Question, ...]

    def docling(self) -> dict[str, Any]:
        return json.loads(self.path.read_text(encoding="utf-8"))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RetrievalSetError(f"cannot read {path}: {exc}") from None


def read_split(set_dir: Path = DEFAULT_SET) -> dict[str, list[str]]:
    data = _read_json(set_dir / "split.json")
    if not isinstance(data, dict) or set(data) != set(SPLITS):
        raise RetrievalSetError(f"{set_dir / 'split.json'}: expected the keys {list(SPLITS)}")
    return {name: list(data[name]) for name in SPLITS}


def _question(where: str, raw: Any) -> Question:
    fields = ("id", "kind", "question", "answer", "rationale")
    if not isinstance(raw, dict) or any(not isinstance(raw.get(f), str) or not raw[f].strip()
                                        for f in fields):
        raise RetrievalSetError(f"{where}: a question needs non-empty strings {', '.join(fields)}")
    if raw["kind"] not in QUESTION_KINDS:
        raise RetrievalSetError(f"{where}: kind {raw['kind']!r} is not one of {', '.join(QUESTION_KINDS)}")
    return Question(*(raw[f] for f in fields))


def read_documents(set_dir: Path = DEFAULT_SET, questions_file: str = QUESTIONS_FILE) -> list[SetDocument]:
    """Every document of the set with its questions, in file order."""
    path = set_dir / questions_file
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        raise RetrievalSetError(f"{path}: expected an object with a 'documents' list")
    documents = []
    for raw in data["documents"]:
        where = f"{path}: document {raw.get('id') if isinstance(raw, dict) else raw!r}"
        if not isinstance(raw, dict) or not all(isinstance(raw.get(f), str)
                                                for f in ("id", "file", "format")):
            raise RetrievalSetError(f"{where}: needs 'id', 'file' and 'format' strings")
        questions = tuple(_question(f"{where} question {i}", q)
                          for i, q in enumerate(raw.get("questions", [])))
        documents.append(SetDocument(raw["id"], set_dir / raw["file"], raw["format"], raw.get("title", ""),
                                     questions))
    return documents


def split_documents(split: str, set_dir: Path = DEFAULT_SET,
                    questions_file: str = QUESTIONS_FILE) -> list[SetDocument]:
    """The documents of one split, in the split file's order."""
    if split not in SPLITS:
        raise RetrievalSetError(f"unknown split {split!r}; one of {', '.join(SPLITS)}")
    by_id = {d.id: d for d in read_documents(set_dir, questions_file)}
    ids = read_split(set_dir)[split]
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise RetrievalSetError(f"split {split!r} names documents without questions: {unknown}")
    return [by_id[i] for i in ids]


def document_units(docling: dict[str, Any]) -> list[str]:
    """The converter's text of a document: one text per block, one per table cell."""
    from loaders.docling import blocks_from_docling

    units: list[str] = []
    for block in blocks_from_docling(docling):
        if block["type"] == "table":
            units.extend(cell["text"] for cell in block["table"]["cells"])
        else:
            units.append(block["text"])
    return units


def markdown_export(docling: dict[str, Any]) -> str:
    """docling-core's Markdown export of the document (its defaults)."""
    from docling_core.types.doc import DoclingDocument

    return DoclingDocument.model_validate(docling).export_to_markdown()
