"""longparser_client.converters.docling (old name loaders.docling): docling's DoclingDocument JSON
turned into our blocks.

The fixtures are real docling conversions copied from docling-core's test data (see
tests/fixtures/docling/SOURCES.md); the small documents built here with docling-core's own API
pin what the fixtures do not hold (nested lists, formulas, missing prov, ...). docling-core is a
dev dependency: a missing package fails these tests, it does not skip them.
"""

from __future__ import annotations

import copy
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from docling_core.types.doc import (
    BoundingBox,
    ContentLayer,
    CoordOrigin,
    DocItemLabel,
    DoclingDocument,
    GraphData,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)

from longparser import chunk_blocks
from longparser.prepare import exclusion_reason
from longparser_client.converters.docling import (
    DoclingInputError,
    DoclingNotInstalledError,
    blocks_from_docling,
    convert_docling,
    is_docling_document,
    join_runs,
)
from schemas import parse_input

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "docling"
NAMES = sorted(path.name for path in FIXTURES.glob("*.docling.json"))
PAPER = "2206.01062.docling.json"  # DocLayNet paper, PDF pipeline, header flags
DOCTAGS = "2206.01062-doctags.docling.json"  # same paper via DocTags: no header flags, no list prov
REPORT = "2408.09869v3.docling.json"  # Docling technical report: title, levels 1-3, code
FORM = "srcl-checkbox-form.docling.json"
MANUAL = "ndbinfo-select-all.docling.json"
CONFIG = {"max_tokens": 256, "min_tokens": 50}


@cache
def _raw_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def raw(name: str) -> dict[str, Any]:
    """A fresh decoded copy of a fixture (tests may mutate it)."""
    return json.loads(_raw_text(name))


@cache
def _converted(name: str) -> Any:
    return convert_docling(raw(name))


def converted(name: str) -> Any:
    return copy.deepcopy(_converted(name))


def by_id(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {block["block_id"]: block for block in blocks}


def prov(page: int, l: float = 50, t: float = 700, r: float = 500, b: float = 680) -> ProvenanceItem:  # noqa: E741
    return ProvenanceItem(
        page_no=page, bbox=BoundingBox(l=l, t=t, r=r, b=b, coord_origin=CoordOrigin.BOTTOMLEFT),
        charspan=(0, 1),
    )


def new_doc(pages: int = 2) -> DoclingDocument:
    doc = DoclingDocument(name="built")
    for page in range(1, pages + 1):
        doc.add_page(page_no=page, size=Size(width=600, height=800))
    return doc


def grid(rows: list[list[str]], header_rows: int = 1) -> TableData:
    cells = [
        TableCell(
            text=text, start_row_offset_idx=r, end_row_offset_idx=r + 1, start_col_offset_idx=c,
            end_col_offset_idx=c + 1, column_header=r < header_rows,
        )
        for r, row in enumerate(rows)
        for c, text in enumerate(row)
    ]
    return TableData(num_rows=len(rows), num_cols=len(rows[0]), table_cells=cells)


# --- the fixtures ----------------------------------------------------------------------------


def test_fixtures_are_present() -> None:
    assert sorted([PAPER, DOCTAGS, REPORT, FORM, MANUAL]) == NAMES
    assert (FIXTURES / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert sum((FIXTURES / name).stat().st_size for name in NAMES) < 3_000_000


@pytest.mark.parametrize("name", NAMES)
def test_fixture_converts_and_every_block_validates(name: str) -> None:
    data = raw(name)
    assert is_docling_document(data)
    conversion = convert_docling(data)
    blocks = conversion.blocks
    assert blocks
    request = parse_input({"document_id": "x", "blocks": blocks})
    assert len(request.blocks) == len(blocks)
    assert all(block.provenance["extractor"] == "docling" for block in request.blocks)
    assert all(isinstance(block["flags"], dict) and block["flags"]["docling_label"] for block in blocks)
    assert conversion.report.blocks_by_type == {
        kind: sum(1 for block in blocks if block["type"] == kind) for kind in {b["type"] for b in blocks}
    }


def test_blocks_from_docling_accepts_the_model_and_the_dict() -> None:
    data = raw(MANUAL)
    from_dict = blocks_from_docling(data)
    from_model = blocks_from_docling(DoclingDocument.model_validate(data))
    assert from_dict == from_model


@pytest.mark.parametrize("name", NAMES)
def test_reading_order_follows_docling(name: str) -> None:
    blocks = converted(name).blocks
    assert [block["order_index"] for block in blocks] == list(range(len(blocks)))
    pages = [block["provenance"]["page_number"] for block in blocks]
    assert pages == sorted(pages)  # docling's reading order runs page by page
    # docling's own order, less the captions/footnotes moved next to their table or picture
    doc = DoclingDocument.model_validate(raw(name))
    layers = {ContentLayer.BODY, ContentLayer.FURNITURE}
    walk = [item.self_ref.removeprefix("#/").replace("/", "-") for item, _ in doc.iterate_items(
        included_content_layers=layers)]
    moved = {block["block_id"] for block in blocks if block["type"] == "caption"
             or block["flags"].get("footnote")}
    ids = [block["block_id"] for block in blocks if block["block_id"] not in moved]
    assert ids == [ref for ref in walk if ref in set(ids)]


def test_reading_order_of_the_paper() -> None:
    blocks = converted(PAPER).blocks
    texts = [block["text"] for block in blocks]
    assert texts.index("1 INTRODUCTION") < texts.index("2 RELATED WORK") < texts.index("REFERENCES")
    references = [block for block in blocks if block["text"].startswith("[")]
    assert [block["text"].split("]")[0] + "]" for block in references] == [f"[{n}]" for n in range(1, 24)]


@pytest.mark.parametrize("name", NAMES)
def test_hierarchy_paths_follow_the_headings(name: str) -> None:
    path: list[str] = []
    for block in converted(name).blocks:
        if block["type"] == "heading":
            assert block["hierarchy_path"][-1] == block["text"]  # a heading's path includes itself
            path = block["hierarchy_path"]
        elif block["type"] in ("header", "footer"):
            assert block["hierarchy_path"] == []  # furniture belongs to no section
        else:
            assert block["hierarchy_path"] == path


def test_heading_levels_and_paths_of_the_report() -> None:
    blocks = {block["text"]: block for block in converted(REPORT).blocks if block["type"] == "heading"}
    title = "Docling Technical Report"
    assert blocks[title]["heading_level"] == 0  # the title stays the root of every path
    assert blocks[title]["hierarchy_path"] == [title]
    assert blocks["1 Introduction"]["heading_level"] == 1
    assert blocks["1 Introduction"]["hierarchy_path"] == [title, "1 Introduction"]
    assert blocks["3.1 PDF backends"]["heading_level"] == 2
    assert blocks["3.1 PDF backends"]["hierarchy_path"] == [
        title, "3 Processing pipeline", "3.1 PDF backends"]
    assert blocks["Layout Analysis Model"]["heading_level"] == 3
    assert blocks["Layout Analysis Model"]["hierarchy_path"] == [
        title, "3 Processing pipeline", "3.2 AI models", "Layout Analysis Model"]
    # a level-2 heading closes the open level-3 one
    assert blocks["3.3 Assembly"]["hierarchy_path"] == [title, "3 Processing pipeline", "3.3 Assembly"]
    assert blocks["4 Performance"]["hierarchy_path"] == [title, "4 Performance"]
    levels = {block["heading_level"] for block in blocks.values()}
    assert levels == {0, 1, 2, 3}


def test_table_cells_spans_and_header_flags_are_carried() -> None:
    doc = DoclingDocument.model_validate(raw(PAPER))
    source = doc.tables[0].data
    table = by_id(converted(PAPER).blocks)["tables-0"]
    assert table["type"] == "table"
    assert table["text"] == ""  # docling stores no table text; the cells are the content
    assert (table["table"]["n_rows"], table["table"]["n_cols"]) == (14, 12)
    cells = table["table"]["cells"]
    assert len(cells) == len(source.table_cells)
    for cell, original in zip(cells, source.table_cells, strict=True):
        assert cell["row_index"] == original.start_row_offset_idx
        assert cell["col_index"] == original.start_col_offset_idx
        assert cell["row_span"] == original.end_row_offset_idx - original.start_row_offset_idx
        assert cell["col_span"] == original.end_col_offset_idx - original.start_col_offset_idx
        assert cell["text"] == original.text
        assert cell["column_header"] == original.column_header
        assert cell["row_header"] == original.row_header
    spanning = next(cell for cell in cells if cell["text"] == "% of Total")
    assert (spanning["row_index"], spanning["col_index"], spanning["col_span"]) == (0, 2, 4)
    assert spanning["column_header"] is True
    assert sum(cell["column_header"] for cell in cells) == 14
    # the DocTags conversion of the same table has no header flags: carried as such
    doctags = by_id(converted(DOCTAGS).blocks)["tables-0"]["table"]["cells"]
    assert not any(cell["column_header"] for cell in doctags)
    assert any(cell["col_span"] == 4 for cell in doctags)


def test_a_spanning_cell_listed_twice_is_one_cell() -> None:
    # docling's conversion of a patent's table lists "SENSITIVITY-EC50 VALUES" (two columns wide)
    # twice with the same span: one cell, not two cells at one position the request refuses
    data = grid([["Stage", "Values", ""], ["Seedling", "1.5", "2.0"]])
    spanning = TableCell(text="Values", start_row_offset_idx=0, end_row_offset_idx=1, start_col_offset_idx=1,
                         end_col_offset_idx=3, column_header=True)
    data.table_cells = [c for c in data.table_cells if c.start_row_offset_idx or c.start_col_offset_idx == 0]
    data.table_cells[1:1] = [spanning, spanning.model_copy()]
    doc = new_doc(1)
    doc.add_table(data, prov=prov(1))
    cells = blocks_from_docling(doc)[0]["table"]["cells"]
    assert [(c["row_index"], c["col_index"], c["col_span"], c["text"]) for c in cells] == [
        (0, 0, 1, "Stage"), (0, 1, 2, "Values"), (1, 0, 1, "Seedling"), (1, 1, 1, "1.5"), (1, 2, 1, "2.0")]
    assert chunk_blocks(blocks_from_docling(doc)).chunks  # valid: the request takes it
    other = spanning.model_copy(update={"text": "Other"})  # a different cell at that position stays
    data.table_cells.append(other)
    assert len(blocks_from_docling(doc)[0]["table"]["cells"]) == 6


def test_table_captions_sit_directly_before_their_table_and_are_attached() -> None:
    conversion = converted(PAPER)
    blocks = conversion.blocks
    doc = DoclingDocument.model_validate(raw(PAPER))
    checked = 0
    for n, table in enumerate(doc.tables):
        if not table.captions:
            continue
        position = next(i for i, b in enumerate(blocks) if b["block_id"] == f"tables-{n}")
        caption = blocks[position - 1]
        assert caption["type"] == "caption"
        assert caption["block_id"] == table.captions[0].cref.removeprefix("#/").replace("/", "-")
        assert caption["provenance"]["page_number"] == blocks[position]["provenance"]["page_number"]
        assert caption["hierarchy_path"] == blocks[position]["hierarchy_path"]
        checked += 1
    assert checked == 4
    result = chunk_blocks(blocks, CONFIG, document_id="x")
    attached = {chunk.metadata.get("caption_block_id") for chunk in result.chunks} - {None}
    assert attached == {"texts-396", "texts-432", "texts-466", "texts-477"}


def test_a_caption_stored_as_the_table_child_moves_before_it() -> None:
    doc = new_doc()
    doc.add_heading("Results", level=1, prov=prov(1))
    doc.add_text(DocItemLabel.TEXT, "Text before the table.", prov=prov(1))
    table = doc.add_table(grid([["Name", "Year"], ["Ada", "1843"]]), prov=prov(1))
    caption = doc.add_text(DocItemLabel.CAPTION, "Table 1: Pioneers.", parent=table, prov=prov(1))
    table.captions.append(caption.get_ref())
    footnote = doc.add_text(DocItemLabel.FOOTNOTE, "a Approximate.", parent=table, prov=prov(1))
    table.footnotes.append(footnote.get_ref())
    blocks = blocks_from_docling(doc)
    assert [(b["type"], b["text"]) for b in blocks[2:]] == [
        ("caption", "Table 1: Pioneers."), ("table", ""), ("paragraph", "a Approximate.")]
    assert blocks[4]["flags"] == {"docling_label": "footnote", "footnote": True}
    result = chunk_blocks(blocks, CONFIG, document_id="x")
    assert any(chunk.metadata.get("caption_block_id") == caption.self_ref.replace("#/", "").replace("/", "-")
               for chunk in result.chunks)


def test_footnotes_are_flagged_paragraphs() -> None:
    footnotes = [b for b in converted(PAPER).blocks if b["flags"].get("footnote")]
    assert len(footnotes) == 3
    assert all(b["type"] == "paragraph" and b["flags"]["docling_label"] == "footnote" for b in footnotes)
    assert footnotes[0]["text"] == "$^{1}$https://developer.ibm.com/exchanges/data/all/doclaynet"


def test_furniture_becomes_headers_and_footers() -> None:
    paper = converted(PAPER).blocks
    headers = [b for b in paper if b["type"] == "header"]
    assert len(headers) == 13
    assert {b["flags"]["docling_label"] for b in headers} == {"page_header"}
    report = converted(REPORT).blocks
    footers = [b for b in report if b["type"] == "footer"]
    assert [b["text"] for b in footers][2:] == [str(n) for n in range(2, 10)]
    # furniture docling labelled "text": header or footer by where it sits on the page
    manual = by_id(converted(MANUAL).blocks)
    assert manual["texts-0"]["type"] == "header"  # running title, top of the page
    assert manual["texts-14"]["type"] == "footer"  # page number "4253", bottom
    assert manual["texts-14"]["text"] == "4253"
    assert manual["texts-14"]["flags"]["docling_label"] == "text"
    # the engine excludes them by default, and keeps them when asked
    result = chunk_blocks(list(manual.values()), CONFIG, document_id="x")
    assert result.stats.blocks_excluded == {"header": 1, "footer": 2}
    kept = chunk_blocks(list(manual.values()), {**CONFIG, "exclude_headers_footers": False}, document_id="x")
    assert "4253" in "\n".join(chunk.text for chunk in kept.chunks)


@pytest.mark.parametrize("name", NAMES)
def test_block_ids_are_deterministic_and_unique(name: str) -> None:
    first = convert_docling(raw(name)).blocks
    second = convert_docling(raw(name)).blocks
    assert first == second
    ids = [block["block_id"] for block in first]
    assert len(ids) == len(set(ids))
    assert all(block_id.split("-")[0] in {"texts", "tables"} for block_id in ids)


def test_ids_come_from_self_ref() -> None:
    blocks = converted(PAPER).blocks
    assert blocks[0]["block_id"] == "texts-0"
    assert "tables-4" in by_id(blocks)


def test_pictures_are_counted_and_their_captions_kept() -> None:
    conversion = converted(PAPER)
    report = conversion.report
    assert report.pictures == 6
    assert report.labels["picture"] == 6
    assert report.skipped["picture"] == 6
    assert report.skipped["inside_picture"] == 384  # text docling found inside the figures
    captions = [b["text"] for b in conversion.blocks if b["type"] == "caption"]
    assert sum(text.startswith("Figure") for text in captions) == 5
    assert converted(REPORT).report.pictures == 13


def test_report_labels_and_document_id() -> None:
    conversion = converted(REPORT)
    assert conversion.document_id == "2408.09869v3"
    assert conversion.source_file == "2408.09869v3.pdf"
    assert conversion.blocks[0]["provenance"]["source_file"] == "2408.09869v3.pdf"
    labels = conversion.report.labels
    assert labels["title"] == 1 and labels["section_header"] == 30 and labels["code"] == 2
    assert conversion.report.pages == 9
    overridden = convert_docling(raw(MANUAL), source_file="manual.pdf")
    assert {b["provenance"]["source_file"] for b in overridden.blocks} == {"manual.pdf"}
    assert convert_docling(raw(MANUAL)).source_file is None


def test_bbox_is_converted_to_top_left_origin() -> None:
    block = by_id(converted(PAPER).blocks)["tables-0"]
    bbox = block["provenance"]["bbox"]
    # docling: l=98.93 t=654.52 r=512.58 b=497.92, bottom-left origin on a 792pt page
    assert bbox["x0"] == pytest.approx(98.931, abs=1e-3)
    assert bbox["x1"] == pytest.approx(512.580, abs=1e-3)
    assert bbox["y0"] == pytest.approx(792 - 654.5245, abs=1e-2)
    assert bbox["y1"] == pytest.approx(792 - 497.9185, abs=1e-2)
    assert bbox["y0"] < bbox["y1"]
    assert "bbox_origin" not in block["flags"]


def test_chunks_of_a_real_conversion_carry_their_blocks_boxes_per_page() -> None:
    # docs/chunking.md, "Provenance": the DocLayNet paper (a two-column PDF with page sizes)
    blocks = converted(PAPER).blocks
    boxes = {b["block_id"]: b["provenance"]["bbox"] for b in blocks}
    pages = {b["block_id"]: b["provenance"]["page_number"] for b in blocks}
    result = chunk_blocks(blocks, CONFIG)
    assert all(chunk.boxes for chunk in result.chunks)  # every block of this conversion has a box
    for chunk in result.chunks:
        assert [box["page"] for box in chunk.boxes] == chunk.page_numbers
        for box in chunk.boxes:
            members = [boxes[i] for i in chunk.block_ids if pages[i] == box["page"]]
            assert box == {"page": box["page"], "l": min(m["x0"] for m in members),
                           "t": min(m["y0"] for m in members), "r": max(m["x1"] for m in members),
                           "b": max(m["y1"] for m in members), "coord_origin": "TOPLEFT"}
    # a table's row batches each carry the table's box, in points from the page's top left
    table = [chunk for chunk in result.chunks if chunk.block_ids == ["tables-0"]]
    assert len(table) > 1
    for chunk in table:
        ((box),) = chunk.boxes
        assert (box["page"], box["l"], box["r"]) == (4, pytest.approx(98.931, abs=1e-3),
                                                     pytest.approx(512.580, abs=1e-3))
        assert box["t"] == pytest.approx(792 - 654.5245, abs=1e-2)
        assert box["b"] == pytest.approx(792 - 497.9185, abs=1e-2)
    # a chunk running from the left column into the right one: its page's box spans both
    middle = 306  # the middle of a 612pt-wide page
    across = [box for chunk in result.chunks for box in chunk.boxes
              if {boxes[i]["x1"] < middle for i in chunk.block_ids if pages[i] == box["page"]}
              >= {True, False}]  # on this page, one block left of the middle and one not
    assert across and all(box["l"] < middle < box["r"] for box in across)


def test_without_page_sizes_chunk_boxes_keep_doclings_bottom_left_origin() -> None:
    document = raw(PAPER)
    document["pages"] = {}  # no page height to convert with
    result = chunk_blocks(convert_docling(document).blocks, CONFIG)
    table = next(chunk for chunk in result.chunks if chunk.block_ids == ["tables-0"])
    assert table.boxes == [{"page": 4, "l": pytest.approx(98.931, abs=1e-3),
                            "t": pytest.approx(654.5245, abs=1e-3), "r": pytest.approx(512.580, abs=1e-3),
                            "b": pytest.approx(497.9185, abs=1e-3), "coord_origin": "BOTTOMLEFT"}]
    assert all(box["t"] >= box["b"] for chunk in result.chunks for box in chunk.boxes)


def test_items_without_prov_take_the_previous_page() -> None:
    conversion = converted(DOCTAGS)
    assert conversion.report.missing_prov == 34
    items = [b for b in conversion.blocks if b["type"] == "list_item"]
    assert all(b["provenance"]["bbox"] is None for b in items)
    blocks = conversion.blocks
    for i, block in enumerate(blocks):
        if block["provenance"]["bbox"] is None:
            assert block["provenance"]["page_number"] == blocks[i - 1]["provenance"]["page_number"]
    # the reference list runs on pages 8 and 9 like the PDF-pipeline conversion says
    pages = {b["text"][:4]: b["provenance"]["page_number"] for b in items if b["text"].startswith("[")}
    assert pages["[1] "] == 8 and pages["[23]"] == 9


def test_list_items_checkboxes_and_markers() -> None:
    blocks = converted(FORM).blocks
    items = [b for b in blocks if b["type"] == "list_item"]
    assert len(items) == 29 + 15 + 41
    assert all(b["indent_level"] >= 1 for b in items)
    numbered = by_id(blocks)["texts-9"]
    assert numbered["text"] == "4. Brief Description of Work - Brève description du travail"
    assert numbered["flags"] == {"docling_label": "list_item", "marker": "4.", "enumerated": True}
    checked = [b for b in items if b["flags"]["docling_label"] == "checkbox_selected"]
    assert len(checked) == 15
    assert all(b["text"].startswith("[x] ") and b["flags"]["checked"] is True for b in checked)
    unchecked = [b for b in items if b["flags"]["docling_label"] == "checkbox_unselected"]
    assert len(unchecked) == 41 and all(b["text"].startswith("[ ] ") for b in unchecked)
    # a bullet marker is not prefixed (docling's default "-"; the text has the PDF's own glyph)
    bullet = next(b for b in converted(REPORT).blocks if b["type"] == "list_item")
    assert bullet["text"].startswith("· Converts PDF documents")
    assert bullet["flags"]["marker"] == "-" and bullet["flags"]["enumerated"] is False


def test_nested_lists_formulas_code_and_missing_prov() -> None:
    doc = new_doc()
    doc.add_title("A Title", prov=prov(1))
    doc.add_heading("Section", level=1, prov=prov(1))
    doc.add_text(DocItemLabel.TEXT, "Steps:", prov=prov(1))
    outer = doc.add_list_group()
    first = doc.add_list_item("first", enumerated=True, marker="1.", parent=outer, prov=prov(1))
    inner = doc.add_list_group(parent=first)
    doc.add_list_item("nested", parent=inner, marker="-", prov=prov(2))
    doc.add_list_item("no prov", parent=inner)
    doc.add_list_item("2. already numbered", enumerated=True, marker="2.", parent=outer, prov=prov(2))
    doc.add_formula("E = mc^2", prov=prov(2))
    doc.add_formula("", prov=prov(2))  # docling leaves undecoded formulas empty
    doc.add_code("print(1)", prov=prov(2))
    doc.add_text(DocItemLabel.TEXT, "x", content_layer=ContentLayer.BACKGROUND)
    doc.add_heading("Sub", level=2)
    conversion = convert_docling(doc)
    blocks = conversion.blocks
    summary = [(b["type"], b["text"], b["indent_level"], b["provenance"]["page_number"]) for b in blocks]
    assert summary == [
        ("heading", "A Title", 0, 1),
        ("heading", "Section", 0, 1),
        ("paragraph", "Steps:", 0, 1),
        ("list_item", "1. first", 1, 1),
        ("list_item", "nested", 2, 2),
        ("list_item", "no prov", 2, 2),  # no prov: the previous block's page
        ("list_item", "2. already numbered", 1, 2),  # marker not doubled
        ("equation", "E = mc^2", 0, 2),
        ("code", "print(1)", 0, 2),
        ("heading", "Sub", 0, 2),
    ]
    assert [b["heading_level"] for b in blocks if b["type"] == "heading"] == [0, 1, 2]
    assert blocks[-1]["hierarchy_path"] == ["A Title", "Section", "Sub"]
    assert blocks[-1]["provenance"]["bbox"] is None
    assert conversion.report.skipped == {"empty_text": 1}
    assert conversion.report.missing_prov == 2
    assert blocks[0]["provenance"]["bbox"] == {"x0": 50.0, "y0": 100.0, "x1": 500.0, "y1": 120.0}
    parse_input({"document_id": "x", "blocks": blocks})


def test_pictures_graphs_and_empty_items_are_skipped_and_counted() -> None:
    doc = new_doc()
    doc.add_heading("Figures", level=1, prov=prov(1))
    picture = doc.add_picture(prov=prov(1))
    caption = doc.add_text(DocItemLabel.CAPTION, "Figure 1: A chart.", parent=picture, prov=prov(1))
    picture.captions.append(caption.get_ref())
    doc.add_text(DocItemLabel.TEXT, "axis label", parent=picture, prov=prov(1))
    doc.add_text(DocItemLabel.TEXT, "", prov=prov(1))
    doc.add_table(TableData(num_rows=0, num_cols=0, table_cells=[]), prov=prov(1))
    conversion = convert_docling(doc)
    assert [(b["type"], b["text"]) for b in conversion.blocks] == [
        ("heading", "Figures"), ("caption", "Figure 1: A chart."), ("table", "")]
    report = conversion.report
    assert report.pictures == 1
    assert report.skipped == {"picture": 1, "inside_picture": 1, "empty_text": 1}
    assert report.labels == {"section_header": 1, "picture": 1, "caption": 1, "text": 1, "table": 1}
    assert report.captions_moved == 1


def test_key_value_regions_and_forms_are_graphs_without_reading_order_and_are_counted() -> None:
    doc = new_doc(1)
    doc.add_text(DocItemLabel.TEXT, "Before the form.", prov=prov(1))
    doc.add_key_values(graph=GraphData(cells=[], links=[]), prov=prov(1))
    doc.add_form(graph=GraphData(cells=[], links=[]), prov=prov(1))
    conversion = convert_docling(doc)
    assert [(b["type"], b["text"]) for b in conversion.blocks] == [("paragraph", "Before the form.")]
    assert conversion.report.skipped == {"key_value_graph": 2}
    assert conversion.report.labels == {"text": 1, "key_value_region": 1, "form": 1}


# --- errors ----------------------------------------------------------------------------------


def test_is_docling_document_is_a_cheap_dict_check() -> None:
    assert is_docling_document({"schema_name": "DoclingDocument"})
    assert not is_docling_document({"blocks": []})
    assert not is_docling_document([{"schema_name": "DoclingDocument"}])
    assert not is_docling_document(None)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["texts"][3].update(label="no-such-label"),
         "invalid DoclingDocument: texts[3].label: 'no-such-label' is not a label of a docling item"),
        (lambda d: d["texts"][0]["prov"][0].update(page_no="x"),
         "invalid DoclingDocument: texts[0].prov[0].page_no: Input should be a valid integer"),
        (lambda d: d["tables"][0]["data"].update(table_cells="oops"),
         "invalid DoclingDocument: tables[0].data.table_cells: Input should be a valid list"),
        (lambda d: d.update(version="9.0.0"), "invalid DoclingDocument: version: "),
        (lambda d: d.update(texts=5), "invalid DoclingDocument: "),
    ],
)
def test_a_broken_document_gives_one_line(mutate: Any, expected: str) -> None:
    data = raw(PAPER)
    mutate(data)
    with pytest.raises(DoclingInputError) as info:
        convert_docling(data)
    message = str(info.value)
    assert message.startswith(expected)
    assert "\n" not in message
    assert len(message) < 400
    assert "pydantic" not in message and "errors.pydantic.dev" not in message
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_not_a_docling_document() -> None:
    with pytest.raises(DoclingInputError, match="schema_name is None"):
        convert_docling({"blocks": []})
    with pytest.raises(DoclingInputError, match="got list"):
        blocks_from_docling([])
    assert issubclass(DoclingInputError, ValueError)


def test_missing_docling_core_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docling_core.types", None)
    with pytest.raises(DoclingNotInstalledError, match=r"pip install 'longparser-client\[docling\]'"):
        convert_docling(raw(MANUAL))
    assert issubclass(DoclingNotInstalledError, ImportError)
    assert is_docling_document(raw(MANUAL))  # the cheap check needs no docling-core


# --- through the engine ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_chunking_the_conversion_loses_no_text(name: str) -> None:
    blocks = converted(name).blocks
    result = chunk_blocks(blocks, CONFIG, document_id=name)
    emitted = "\n".join(chunk.text for chunk in result.chunks)
    primary = {block_id for chunk in result.chunks for block_id in chunk.block_ids}
    checked = 0
    for block in blocks:
        cells = (block["table"] or {}).get("cells") or []
        if exclusion_reason(block["type"], block["text"], bool(cells), True) is not None:
            continue
        assert block["block_id"] in primary, block["block_id"]
        if cells:
            for cell in cells:
                assert " ".join(cell["text"].split()) in emitted
        else:
            assert block["text"] in emitted, block["block_id"]
        checked += 1
    assert checked >= len(blocks) * 0.8


# --- inline groups: a paragraph stays one block ---------------------------------------------------

INLINE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "docling_inline"


def _inline_conversion(name: str) -> Any:
    return convert_docling(json.loads((INLINE_FIXTURES / name).read_text(encoding="utf-8")))


def test_a_paragraph_of_formatted_runs_is_one_block() -> None:
    conversion = _inline_conversion("formatting.html.json")
    paragraphs = [block for block in conversion.blocks if block["type"] == "paragraph"]
    assert [block["block_id"] for block in paragraphs] == [f"groups-{i}" for i in range(6)]
    assert paragraphs[0]["text"] == (
        "This is a bold (b) example and right next to it we have a strong emphasis (strong). Notice "
        "that strong + bold mixed looks similar but carries additional semantic meaning.")
    assert paragraphs[4]["text"] == (
        "Subscript and superscript examples: Water is written as H2O using sub. The mathematical "
        "expression x2 + y3 uses sup. They can also be combined: CO2*.")
    assert paragraphs[0]["flags"] == {"docling_label": "inline", "inline_runs": 7}
    assert all(block["hierarchy_path"] == ["HTML Text Formatting Examples"] for block in paragraphs)
    assert conversion.report.inline_runs_joined == 47  # every run of the six groups, none a block


def test_a_list_item_whose_text_is_an_inline_group_gets_its_text() -> None:
    blocks = _inline_conversion("hyperlink_03.html.json").blocks
    items = [(block["block_id"], block["text"], block["indent_level"]) for block in blocks]
    assert ("texts-3", "This is my Homepage", 3) in items
    assert ("texts-7", "More text with some links and more text.", 4) in items
    assert all(block["type"] == "list_item" for block in blocks)


def test_inline_formulas_stay_in_their_sentence_and_kept_whitespace_is_used() -> None:
    blocks = _inline_conversion("equations.docx.json").blocks
    texts = [block["text"] for block in blocks]
    assert "This is a word document and this is an inline equation: A= \\pi r^{2}." in texts
    assert "Second item with equations: E=mc^{2} and F=ma are physics formulas." in texts
    # display formulas (not in an inline group) are still blocks of their own
    assert sum(block["type"] == "equation" for block in blocks) == 19


def test_an_inline_paragraph_is_chunked_whole() -> None:
    blocks = _inline_conversion("formatting.html.json").blocks
    result = chunk_blocks(blocks, {"max_tokens": 64, "min_tokens": 0, "overlap_blocks": 0})
    sentence = "Water is written as H2O using sub."
    assert sum(sentence in chunk.text for chunk in result.chunks) == 1


def test_an_inline_group_takes_its_runs_layer_not_its_own() -> None:
    """docling yields each item by its own layer: body runs in a group marked furniture (older
    documents mark their inline groups so) are a paragraph; runs all furniture stay furniture."""
    doc = new_doc(1)
    doc.add_heading("Results", level=1, prov=prov(1))
    body = doc.add_inline_group(content_layer=ContentLayer.FURNITURE)
    doc.add_text(DocItemLabel.TEXT, "The model", parent=body, prov=prov(1))
    doc.add_text(DocItemLabel.TEXT, "converges.", parent=body, prov=prov(1))
    running = doc.add_inline_group(content_layer=ContentLayer.FURNITURE)
    furniture = ContentLayer.FURNITURE
    doc.add_text(DocItemLabel.TEXT, "Page", parent=running, prov=prov(1), content_layer=furniture)
    doc.add_text(DocItemLabel.TEXT, "3", parent=running, prov=prov(1), content_layer=furniture)
    blocks = convert_docling(doc).blocks
    assert [(b["type"], b["text"], b["hierarchy_path"]) for b in blocks] == [
        ("heading", "Results", ["Results"]),
        ("paragraph", "The model converges.", ["Results"]),
        ("header", "Page 3", []),  # furniture, by where it sits on its page
    ]


@pytest.mark.parametrize(
    ("runs", "text"),
    [
        ([("Visit", "baseline"), ("our site", "baseline"), (".", "baseline")], "Visit our site."),
        ([("kept ", "baseline"), ("space", "baseline"), (" here", "baseline")], "kept space here"),
        ([("H", "baseline"), ("2", "sub"), ("O is water", "baseline")], "H2O is water"),
        ([("area in m", "baseline"), ("2", "super"), ("per day", "baseline")], "area in m2 per day"),
        ([("(see", "baseline"), ("Table 2", "baseline"), (")", "baseline")], "(see Table 2)"),
        ([("a", "baseline"), ("", "baseline"), ("b", "baseline")], "a b"),
    ],
)
def test_join_runs(runs: list[tuple[str, str]], text: str) -> None:
    assert join_runs(runs) == text


def test_row_header_cells_label_their_rows() -> None:
    doc = new_doc(1)
    data = grid([["Region", "Q1"], ["North", "10"], ["South", "12"]])
    for cell in data.table_cells:
        cell.row_header = cell.start_col_offset_idx == 0 and cell.start_row_offset_idx > 0
    box = BoundingBox(l=0, t=0, r=1, b=1)
    doc.add_table(data=data, prov=ProvenanceItem(page_no=1, bbox=box, charspan=(0, 0)))
    blocks = convert_docling(doc).blocks
    flags = [cell["row_header"] for cell in blocks[0]["table"]["cells"]]
    assert flags == [False, False, True, False, True, False]
    result = chunk_blocks(blocks, {"table_chunk_format": "labelled", "generate_schema_chunks": False})
    assert result.chunks[0].text == "Region\nNorth: Q1=10\nSouth: Q1=12"  # the label column named once


@pytest.mark.parametrize("name", NAMES)
def test_every_converted_block_carries_its_text(name: str) -> None:
    # a block without text is refused (schemas.blocks.Block.text): the converter always writes it
    blocks = _converted(name).blocks
    assert blocks and all(isinstance(block.get("text"), str) for block in blocks)
