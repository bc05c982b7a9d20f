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
        ({"max_tokens": 50}, "config: min_tokens (100, its default) must be smaller than max_tokens (50): "
                             "set min_tokens below 50"),
        ({"max_token": 50}, "config.max_token: unknown field, did you mean 'max_tokens'?"),
        ({"overlap_block": 2}, "config.overlap_block: unknown field, did you mean 'overlap_blocks'?"),
        ({"strict": True}, "config.strict: unknown field, did you mean 'strict_max_tokens'?"),
        ({"max-tokens": 9}, "config.max-tokens: unknown field, did you mean 'max_tokens'?"),
        ({"chunk": 1}, "config.chunk: unknown field (ChunkingConfig fields: "),
        ({"zzz": 1}, "config.zzz: unknown field (ChunkingConfig fields: max_tokens, min_tokens, "),
        ({"overlap_blocks": 17}, "config.overlap_blocks: Input should be less than or equal to 16 (got 17)"),
        ({"max_tokens": 0}, "config.max_tokens: Input should be greater than or equal to 1 (got 0)"),
        ({"token_counter": "bert"}, "config.token_counter: Input should be 'estimate' or 'model'"),
    ],
    ids=["min-default", "typo", "typo-2", "part", "dashes", "ambiguous-part", "unknown", "overlap-limit",
         "max-limit", "literal"],
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
                r"\(loaders.docling.blocks_from_docling; pip install 'longparser-worker\[docling\]'\)$")
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
    [("report", "report"), ("Q3 report (final)", "Q3-report-final-"), ("__draft__.v2", "draft__.v2"),
     ("ééé", None), ("", None), ("x" * 300, "x" * 200)],
)
def test_document_id_from_name(name: str, expected: str | None) -> None:
    assert document_id_from_name(name) == expected


def test_unknown_shape_names_every_accepted_one() -> None:
    with pytest.raises(InputError, match=r"DoclingDocument, got int$"):
        parse_input(42)
    with pytest.raises(InputError, match=r"'schema_name': 'DoclingDocument'$"):
        parse_input({"neither": 1})
