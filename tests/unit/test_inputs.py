"""schemas.inputs: every accepted input shape into a ChunkRequest, and its one-line messages.

The DoclingDocument path is tested here with a stub converter (the wire contract imports no
converter); the real conversion through the CLI and the client is in test_cli / test_client.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from schemas import ChunkingConfig, InputError
from schemas.inputs import document_id_from_name, is_docling_input, parse_config, parse_input

BLOCK = {"block_id": "b1", "type": "paragraph", "text": "Hello there."}


def stub_converter(calls: list[Any]) -> Any:
    def convert(document: Any) -> list[dict[str, Any]]:
        calls.append(document)
        return [dict(BLOCK)]

    return convert


# --- LongParser document dumps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ([{"page_number": 1, "blocks": []}, {"page_number": 2, "blocks": []},
          {"page_number": 3, "blocks": None}],
         "document dump: page 3 must be an object with a 'blocks' list ('blocks' is null)"),
        ([{"blocks": []}, {"blocks": []}, {"blocks": None}],
         "document dump: page 3 must be an object with a 'blocks' list ('blocks' is null)"),
        ([{"page_number": 7, "blocks": {"b": 1}}],
         "document dump: page 7 must be an object with a 'blocks' list ('blocks' is an object)"),
        ([{"page_number": True, "blocks": "x"}],
         "document dump: page 1 must be an object with a 'blocks' list ('blocks' is a string)"),
        ([{"blocks": []}, None],
         "document dump: page 2 must be an object with a 'blocks' list (not an object)"),
    ],
    ids=["own-number", "position", "object", "bool-number", "not-object"],
)
def test_a_bad_page_is_named_by_its_own_number_else_its_1_based_position(
    pages: list[Any], message: str
) -> None:
    with pytest.raises(InputError) as info:
        parse_input({"pages": pages}, default_document_id="d")
    assert str(info.value) == message


def test_a_page_without_blocks_is_an_empty_page() -> None:
    dump = {"metadata": {"document_id": "m"}, "pages": [{"page_number": 1}, {"blocks": [BLOCK]}]}
    request = parse_input(dump)
    assert (request.document_id, [b.block_id for b in request.blocks]) == ("m", ["b1"])


# --- config messages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_tokens": 50, "min_tokens": 50},
         "config: min_tokens (50) must be smaller than max_tokens (50): set min_tokens below 50"),
        ({"max_token": 50}, "config.max_token: unknown field, did you mean 'max_tokens'?"),
        ({"overlap_block": 2}, "config.overlap_block: unknown field, did you mean 'overlap_blocks'?"),
        ({"strict": True}, "config.strict: unknown field, did you mean 'strict_max_tokens'?"),
        ({"max-tokens": 9}, "config.max-tokens: unknown field, did you mean 'max_tokens'?"),
        ({"chunk": 1}, "config.chunk: unknown field (ChunkingConfig fields: "),
        ({"zzz": 1}, "config.zzz: unknown field (ChunkingConfig fields: max_tokens, min_tokens, "),
        ({"overlap_blocks": 17}, "config.overlap_blocks: Input should be less than or equal to 16 (got 17)"),
        ({"max_tokens": 0}, "config.max_tokens: Input should be greater than or equal to 1 (got 0)"),
        ({"token_counter": " "},
         "config.token_counter: token_counter must be 'estimate', 'model', a tokenizer name or a path"),
    ],
    ids=["min-default", "typo", "typo-2", "part", "dashes", "ambiguous-part", "unknown", "overlap-limit",
         "max-limit", "counter"],
)
def test_config_errors_are_one_clean_line(config: dict[str, Any], message: str) -> None:
    for parse in (lambda: parse_input([], default_document_id="d", config_overrides=config),
                  lambda: parse_input({"document_id": "d", "blocks": [], "config": config}),
                  lambda: parse_config(config)):
        with pytest.raises(InputError) as info:
            parse()
        text = str(info.value)
        assert text.startswith(message), text
        assert "Value error" not in text and "\n" not in text


def test_several_problems_are_joined_on_one_line() -> None:
    with pytest.raises(InputError) as info:
        parse_input({"document_id": "d", "blocks": [{"type": "banana"}], "config": {"max_token": 1}})
    message = str(info.value)
    assert message.startswith("block 0: block_id: Field required; block 0: type: Input should be 'heading'")
    assert message.endswith("; config.max_token: unknown field, did you mean 'max_tokens'?")
    assert "\n" not in message


def test_parse_config_returns_the_config() -> None:
    assert parse_config({"max_tokens": 64, "min_tokens": 0}) == ChunkingConfig(max_tokens=64, min_tokens=0)


# --- DoclingDocument -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "default", "document_id"),
    [("2206.01062", "file", "2206.01062"), ("Q3 report (final)", "file", "Q3-report-final-"),
     ("", "file", "file"), ("***", "file", "file"), (None, "file", "file"),
     ("Document", "file", "file"), ("Document ", "file", "file"), ("Documents", "file", "Documents")],
    ids=["name", "unsafe-name", "empty", "unusable", "none", "docling-default", "docling-default-spaced",
         "not-the-default"],
)
def test_docling_document_id_is_its_name_else_the_default(name: Any, default: str, document_id: str) -> None:
    calls: list[Any] = []
    document = {"schema_name": "DoclingDocument", "name": name}

    request = parse_input(document, default_document_id=default, docling=stub_converter(calls),
                          config_overrides={"max_tokens": 256})

    assert calls == [document]
    assert (request.document_id, [b.block_id for b in request.blocks]) == (document_id, ["b1"])
    assert request.config.max_tokens == 256


@pytest.mark.parametrize("name", ["Document", None, "***"])
def test_docling_document_without_a_name_of_its_own_or_a_default_is_refused_before_converting(
    name: Any,
) -> None:
    calls: list[Any] = []
    with pytest.raises(InputError) as info:
        parse_input({"schema_name": "DoclingDocument", "name": name}, docling=stub_converter(calls))
    assert str(info.value) == (
        "document_id: missing: the DoclingDocument has no name of its own (docling's default "
        "'Document' counts as none); set its name to the document's id"
    )
    assert calls == []  # the conversion is not paid for a request that cannot be sent


def test_docling_default_name_is_docling_s_own() -> None:
    """The name treated as "no name" is the one docling gives a document converted from DocTags."""
    import inspect

    from docling_core.types.doc import DoclingDocument

    from schemas.inputs import DOCLING_DEFAULT_NAME

    parameters = inspect.signature(DoclingDocument.load_from_doctags).parameters
    assert parameters["document_name"].default == DOCLING_DEFAULT_NAME


def test_docling_model_object_is_recognised() -> None:
    calls: list[Any] = []
    document = SimpleNamespace(schema_name="DoclingDocument", name="paper")

    assert is_docling_input(document) and is_docling_input({"schema_name": "DoclingDocument"})
    assert not is_docling_input({"blocks": []}) and not is_docling_input([]) and not is_docling_input(None)
    assert parse_input(document, docling=stub_converter(calls)).document_id == "paper"
    assert calls == [document]


def test_docling_document_without_a_converter_is_refused() -> None:
    expected = (r"^a DoclingDocument must be converted to blocks on the producer side: pass the converter "
                r"\(longparser_client.converters.docling.blocks_from_docling; "
                r"pip install 'longparser-client\[docling\]'\)$")
    with pytest.raises(InputError, match=expected):
        parse_input({"schema_name": "DoclingDocument", "name": "x"})


def test_a_converter_error_becomes_one_input_error_line() -> None:
    def broken(document: Any) -> list[Any]:
        raise ValueError("invalid DoclingDocument: texts[0]:\n  bad")

    with pytest.raises(InputError) as info:
        parse_input({"schema_name": "DoclingDocument", "name": "x"}, docling=broken)
    assert str(info.value) == "invalid DoclingDocument: texts[0]: bad"
    assert info.value.__cause__ is None


def test_converted_blocks_are_validated_like_any_others() -> None:
    with pytest.raises(InputError, match=r"^block 0 \(id 'b1'\): type: Input should be"):
        parse_input({"schema_name": "DoclingDocument", "name": "x"},
                    docling=lambda _: [{**BLOCK, "type": "banana"}])


@pytest.mark.parametrize(
    ("name", "expected"),
    [("report", "report"), ("Q3 report (final)", "Q3-report-final-"), ("__draft__.v2", "__draft__.v2"),
     ("ééé", "eee"), ("Bericht_Ü", "Bericht_U"), ("Ærø", "AEro"), ("报告", None), ("-.x", "x"), ("", None),
     ("x" * 300, "x" * 200)],
)
def test_document_id_from_name(name: str, expected: str | None) -> None:
    assert document_id_from_name(name) == expected


def test_unknown_shape_names_every_accepted_one() -> None:
    with pytest.raises(InputError, match=r"DoclingDocument or a Markdown or text string, got int$"):
        parse_input(42)
    with pytest.raises(InputError, match=r"'schema_name': 'DoclingDocument'$"):
        parse_input({"neither": 1})


# --- strict config values, unique ids, long messages, dump pages -----------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_tokens": True},
         "config.max_tokens: must be an integer, got true (a boolean); config values are never converted"),
        ({"max_tokens": "256"}, 'config.max_tokens: must be an integer, got "256" (a string)'),
        ({"max_tokens": 256.0}, "config.max_tokens: must be an integer, got 256.0 (a number)"),
        ({"semantic_threshold": "0.3"}, 'config.semantic_threshold: must be a number, got "0.3" (a string)'),
        ({"heading_context": 1}, "config.heading_context: must be true or false, got 1 (a number)"),
        ({"heading_context": "true"}, 'config.heading_context: must be true or false, got "true" (a string)'),
    ],
    ids=["bool-as-int", "string-int", "float-int", "string-float", "int-bool", "string-bool"],
)
def test_config_values_are_never_coerced(config: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_config(config)
    assert str(info.value).startswith(message)


def test_config_numbers_of_the_right_json_type_are_accepted() -> None:
    config = parse_config({"max_tokens": 256, "overlap_max_share": 1, "semantic_threshold": 0.25,
                           "heading_context": True})
    assert (config.max_tokens, config.overlap_max_share, config.heading_context) == (256, 1.0, True)


def test_a_message_names_five_problems_then_counts_the_rest() -> None:
    blocks = [{"block_id": f"b{i}", "type": "sidebar", "text": ""} for i in range(104)]
    with pytest.raises(InputError) as info:
        parse_input({"document_id": "d", "blocks": blocks})
    message = str(info.value)
    assert message.count("Input should be") == 5
    assert message.endswith("; ... and 99 more")
    assert len(message) < 1000


def test_a_long_value_is_quoted_short() -> None:
    with pytest.raises(InputError) as info:
        parse_config({"max_tokens": "9" * 5000})
    assert len(str(info.value)) < 200


def test_a_dump_block_without_a_page_is_on_the_page_it_is_listed_under() -> None:
    dump = {"metadata": {"document_id": "d"}, "pages": [
        {"blocks": [{"block_id": "a", "type": "paragraph", "text": "one"}]},
        {"blocks": [{"block_id": "b", "type": "paragraph", "text": "two"},
                    {"block_id": "c", "type": "paragraph", "text": "three", "provenance": None},
                    {"block_id": "d", "type": "paragraph", "text": "four", "provenance": {"bbox": None}},
                    {"block_id": "e", "type": "paragraph", "text": "five",
                     "provenance": {"page_number": 9}}]},
        {"page_number": 7, "blocks": [{"block_id": "f", "type": "paragraph", "text": "six"}]},
    ]}
    pages = [block.provenance["page_number"] for block in parse_input(dump).blocks]
    assert pages == [1, 2, 2, 2, 9, 7]
    assert "provenance" not in dump["pages"][1]["blocks"][0]  # the caller's dump is not modified


def test_document_id_option_wins_over_the_input_s_own() -> None:
    request = parse_input({"document_id": "own", "blocks": []}, document_id="given", default_document_id="x")
    assert request.document_id == "given"


def test_a_config_value_json_cannot_write_is_named_as_python_writes_it() -> None:
    with pytest.raises(InputError, match=r"max_tokens: must be an integer, got .*object"):
        parse_input({"document_id": "d", "blocks": [], "config": {"max_tokens": object()}})


def test_a_config_override_needs_the_input_config_to_be_an_object() -> None:
    with pytest.raises(InputError, match="config: must be an object"):
        parse_input({"document_id": "d", "blocks": [], "config": [1]}, config_overrides={"max_tokens": 64})


def test_a_dump_page_entry_that_is_not_an_object_is_named_by_validation() -> None:
    dump = {"metadata": {}, "pages": [{"page_number": 1, "blocks": ["not a block"]}]}
    with pytest.raises(InputError, match="block 0"):
        parse_input(dump, document_id="d")


# --- blocks without text ---------------------------------------------------------------------


@pytest.mark.parametrize(("block", "expected"), [
    ({"block_id": "b1", "type": "paragraph", "content": "The text."},
     "block 0 (id 'b1'): text: field required (it has 'content')"),
    ({"block_id": "b1", "type": "heading", "body": "Intro", "Text": "Intro", "order_index": 3},
     "block 0 (id 'b1'): text: field required (it has 'body', 'Text')"),
    ({"block_id": "b1", "type": "list_item", "level": 2},
     "block 0 (id 'b1'): text: field required (its keys: 'block_id', 'type', 'level')"),
])
def test_a_block_without_text_is_refused_naming_what_it_has(block: dict[str, Any], expected: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_input({"document_id": "d", "blocks": [BLOCK, block]})
    assert str(raised.value) == expected.replace("block 0", "block 1")


def test_null_blank_and_absent_text_of_tables_and_figures_are_accepted() -> None:
    blocks = [{"block_id": "n", "type": "paragraph", "text": None},
              {"block_id": "e", "type": "paragraph", "text": ""},
              {"block_id": "f", "type": "figure"}, {"block_id": "t", "type": "table", "table": None}]
    request = parse_input({"document_id": "d", "blocks": blocks})
    assert [block.text for block in request.blocks] == ["", "", "", ""]
