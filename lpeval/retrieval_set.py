"""The real-document retrieval sets (``eval/retrieval_v1``, ``eval/retrieval_v2``): documents, questions.

A set directory holds ``split.json`` (``{"dev": [ids], "test": [ids]}``; a set may have only
one of the two), a questions file (``{"version", "documents": [{"id", "file", "format", "title",
"questions": [{"id", "kind", "question", "answer", "rationale"}]}]}``), the files it names and
``documents/manifest.json`` (each file's origin and git blob id). A document is either docling's
JSON (a DoclingDocument) or a Markdown file (``.md``) read by the
project's Markdown reader (:mod:`loaders.markdown`) with ``"docling_file"`` naming docling's own
conversion of the same file (what the DoclingDocument-based anchors chunk).

This module reads them and gives each document's text in the two forms chunkers start from:

* :meth:`SetDocument.units`: the project's blocks of the document (:mod:`loaders.docling`, or
  :mod:`loaders.markdown` for Markdown), one text per block and, for a table, one per cell.
  Answer strings are written against these units (the text of one block or of one cell), so a
  chunker that keeps a block or a cell whole can hold every answer.
* :meth:`SetDocument.markdown`: docling-core's own Markdown export (a Markdown document's own
  text), what the Markdown-based chunkers read.

:func:`validate_set` holds the labelling protocol's checks, one definition for every set; each
set's ``validate.py`` calls it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
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


MARKDOWN_SUFFIX = ".md"


@dataclass(frozen=True)
class SetDocument:
    id: str
    path: Path
    format: str
    title: str
    questions: tuple[Question, ...]
    docling_path: Path | None = None  # docling's conversion of a Markdown document

    @property
    def is_markdown(self) -> bool:
        return self.path.suffix == MARKDOWN_SUFFIX

    def docling(self) -> dict[str, Any]:
        """docling's JSON of the document (for a Markdown document: docling's conversion of it)."""
        path = self.docling_path if self.is_markdown and self.docling_path else self.path
        return json.loads(path.read_text(encoding="utf-8"))

    def blocks(self) -> list[dict[str, Any]]:
        """The project's blocks of the document: what our rows chunk."""
        if self.is_markdown:
            from loaders.markdown import blocks_from_markdown

            return blocks_from_markdown(self.path.read_text(encoding="utf-8"), source_file=self.path.name)
        from loaders.docling import blocks_from_docling

        return blocks_from_docling(self.docling(), source_file=self.path.name)

    def units(self) -> list[str]:
        """One text per block, one per table cell (what answer strings are checked against)."""
        return block_units(self.blocks())

    def markdown(self) -> str:
        """What the Markdown-based chunkers read: docling's export, or the Markdown file itself."""
        if self.is_markdown:
            return self.path.read_text(encoding="utf-8")
        return markdown_export(self.docling())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RetrievalSetError(f"cannot read {path}: {exc}") from None


def read_split(set_dir: Path = DEFAULT_SET) -> dict[str, list[str]]:
    """Document ids per split; a split the set does not have is empty (retrieval_v2: test only)."""
    data = _read_json(set_dir / "split.json")
    if not isinstance(data, dict) or not data or not set(data) <= set(SPLITS):
        raise RetrievalSetError(f"{set_dir / 'split.json'}: expected the keys {list(SPLITS)} or one of them")
    return {name: list(data.get(name, [])) for name in SPLITS}


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
        if raw["file"].endswith(MARKDOWN_SUFFIX) and not isinstance(raw.get("docling_file"), str):
            raise RetrievalSetError(f"{where}: a Markdown document needs 'docling_file' (its conversion)")
        docling_path = set_dir / raw["docling_file"] if isinstance(raw.get("docling_file"), str) else None
        documents.append(SetDocument(raw["id"], set_dir / raw["file"], raw["format"], raw.get("title", ""),
                                     questions, docling_path))
    return documents


def split_documents(split: str, set_dir: Path = DEFAULT_SET,
                    questions_file: str = QUESTIONS_FILE) -> list[SetDocument]:
    """The documents of one split, in the split file's order."""
    if split not in SPLITS:
        raise RetrievalSetError(f"unknown split {split!r}; one of {', '.join(SPLITS)}")
    by_id = {d.id: d for d in read_documents(set_dir, questions_file)}
    ids = read_split(set_dir)[split]
    if not ids:
        raise RetrievalSetError(f"{set_dir} has no {split!r} split")
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise RetrievalSetError(f"split {split!r} names documents without questions: {unknown}")
    return [by_id[i] for i in ids]


def block_units(blocks: Sequence[dict[str, Any]]) -> list[str]:
    """One text per block, one per table cell."""
    units: list[str] = []
    for block in blocks:
        if block["type"] == "table":
            units.extend(cell["text"] for cell in block["table"]["cells"])
        else:
            units.append(block["text"])
    return units


def document_units(docling: dict[str, Any]) -> list[str]:
    """The docling converter's text of a document: one text per block, one per table cell."""
    from loaders.docling import blocks_from_docling

    return block_units(blocks_from_docling(docling))


def markdown_export(docling: dict[str, Any]) -> str:
    """docling-core's Markdown export of the document (its defaults)."""
    from docling_core.types.doc import DoclingDocument

    return DoclingDocument.model_validate(docling).export_to_markdown()


# --- the labelling protocol's checks -----------------------------------------------------------

# Documents kept for independent evaluation: never in a set, a fixture, a benchmark or tuning.
RESERVED_FILES = frozenset({
    "1706.03762_main.tex.json", "2203.01017v2.json", "2305.03393v1.json", "redp5110_sampled.json",
    "amt_handbook_sample.json", "pone.0234687.nxml.json", "elife-56337.nxml.json", "wiki_duck.html.json",
    "ipa20180000016.json", "grve_10q_htm.xml.json", "docx_rich_tables_01.docx.json", "ptag100.xml.json",
    "pftaps057006474.json", "epub_purvis_poetry.epub.json", "mlac-20251231.xml.json", "normal_4pages.json",
    "2311.18481v1.json", "2408.09869v5_hierarchical_enriched_summary.json", "cross_page_lists.json",
})
# Names that mark a reserved document in any version or extract (page extracts, other exports).
RESERVED_STEMS = ("2408.09869", "2305.03393", "1706.03762", "2203.01017", "2311.18481", "redp5110",
                  "amt_handbook", "pone.0234687", "elife-56337", "wiki_duck", "ipa20180000016", "grve_10q",
                  "docx_rich_tables_01", "ptag100", "pftaps057006474", "epub_purvis_poetry", "mlac-20251231",
                  "normal_4pages", "cross_page_lists")
# Where documents already used for testing or tuning live: a new set takes none of their files.
USED_ELSEWHERE = ("tests/fixtures", "eval/retrieval_v1/documents")


def blob_id(path: Path) -> str:
    """git's blob id of a file (what the manifest records, so a copy is checked byte for byte)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _blobs_under(folders: Sequence[Path]) -> dict[str, Path]:
    return {blob_id(f): f for folder in folders if folder.is_dir()
            for f in sorted(folder.rglob("*")) if f.is_file()}


def validate_set(set_dir: Path, questions_file: str = QUESTIONS_FILE) -> tuple[list[str], list[str]]:
    """The protocol's checks of one set: (report lines, errors). No chunker, no model runs.

    * every document file (and a Markdown document's docling conversion) has the git blob id
      ``documents/manifest.json`` records, is not a reserved document, and (for any set but
      retrieval_v1) is no file of the tests' fixtures or of retrieval_v1;
    * ``split.json`` puts every document in exactly one split;
    * question ids are unique (kinds and rationales are checked when the file is read);
    * each answer occurs exactly once in its document's units (:meth:`SetDocument.units`, after
      NFKC, case folding and whitespace collapsing) and at least once in what the Markdown-based
      chunkers read; a Markdown document's answers also occur in docling's conversion of it;
    * at least half of the answers are 4 words or more.
    """
    from lpeval.retrieval_metrics import normalise, occurrences

    errors: list[str] = []
    manifest = _read_json(set_dir / "documents" / "manifest.json")
    documents = read_documents(set_dir, questions_file)
    split = read_split(set_dir)
    ids = [d.id for d in documents]
    in_split = split["dev"] + split["test"]
    if sorted(in_split) != sorted(ids) or len(set(in_split)) != len(in_split):
        errors.append(f"split.json must hold each document once: {sorted(set(ids) ^ set(in_split))}")
    question_ids = Counter(q.id for d in documents for q in d.questions)
    errors += [f"duplicate question id {i}" for i, n in question_ids.items() if n > 1]
    first_set = set_dir.resolve() == DEFAULT_SET.resolve()
    used = {} if first_set else _blobs_under([ROOT / f for f in USED_ELSEWHERE])
    kinds: Counter[tuple[str, str]] = Counter()
    long_answers = total = 0
    for doc in documents:
        for path in filter(None, (doc.path, doc.docling_path)):
            name, entry = path.name, manifest.get(path.name)
            if name in RESERVED_FILES or any(stem in name for stem in RESERVED_STEMS):
                errors.append(f"{doc.id}: {name} is a reserved document")
            if entry is None:
                errors.append(f"{doc.id}: {name} is not in documents/manifest.json")
                continue
            blob = blob_id(path)
            if blob != entry["blob"]:
                errors.append(f"{doc.id}: {name} is not the recorded blob {entry['blob']}")
            if blob in used:
                errors.append(f"{doc.id}: {name} is already used in {used[blob].relative_to(ROOT)}")
        units = [normalise(u) for u in doc.units()]
        markdown = doc.markdown()
        converted = [normalise(u) for u in document_units(doc.docling())] if doc.is_markdown else None
        doc_split = "dev" if doc.id in split["dev"] else "test"
        for q in doc.questions:
            total += 1
            kinds[(doc_split, q.kind)] += 1
            long_answers += len(q.answer.split()) >= 4
            found = sum(u.count(normalise(q.answer)) for u in units)
            if found != 1:
                errors.append(f"{q.id}: answer {q.answer!r} occurs {found} times in the document's units")
            if occurrences(markdown, q.answer) < 1:
                errors.append(f"{q.id}: answer {q.answer!r} is not in the Markdown the chunkers read")
            if converted is not None and not any(normalise(q.answer) in u for u in converted):
                errors.append(f"{q.id}: answer {q.answer!r} is not in docling's conversion")
    if 2 * long_answers < total:
        errors.append(f"only {long_answers} of {total} answers have 4 words or more")
    lines = []
    for s in SPLITS:
        docs = [d for d in documents if d.id in split[s]]
        if docs:
            by_kind = ", ".join(f"{k} {kinds[(s, k)]}" for k in QUESTION_KINDS)
            questions = sum(len(d.questions) for d in docs)
            lines.append(f"{s}: {len(docs)} documents, {questions} questions ({by_kind})")
    lines.append(f"answers of 4 words or more: {long_answers} of {total}")
    return lines, errors


def validate_main(set_dir: Path, argv: Sequence[str]) -> int:
    """A set's ``validate.py``: prints the counts and every error, exit status 1 on any error."""
    lines, errors = validate_set(set_dir, argv[0] if argv else QUESTIONS_FILE)
    for line in lines:
        print(line)
    for error in errors:
        print("ERROR", error)
    print("OK" if not errors else f"{len(errors)} error(s)")
    return 1 if errors else 0
