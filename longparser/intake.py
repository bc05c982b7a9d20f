"""Intake: the caller's blocks, validated, as the fields the stages read.

``chunk_blocks`` takes Block models or plain dicts in LongParser's dump shape. Either way
:func:`prepare <longparser.prepare.prepare>` reads one :data:`BlockFields` tuple per block:

* a Block model is read as it is (:func:`fields_of_model`);
* a dict is validated by the TypedDict mirror of the contract
  (:mod:`schemas.block_dicts`, ~1.8x cheaper than building the models) and read by
  :func:`fields_of_dict`, which applies the defaults Block applies with validators. A dict the
  mirror rejects is validated by Block itself, so the error raised is always Block's own
  (and a dict Block accepts is chunked even if the mirror were ever stricter).

Dicts are validated one at a time while prepare reads them (streaming): no model or
validated dict is held for the whole document, so memory stays flat on large inputs;
:attr:`BlockIntake.seconds` is the time spent validating.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from schemas import Block
from schemas.block_dicts import validate_block_dict

# (block_id, type, text, hierarchy_path, page, confidence.overall, table cells or None)
# The cells are TableCell dataclasses (models) or validated cell dicts (dict input);
# longparser.tables reads either.
BlockFields = tuple[str, str, str, list[str], int, float, list[Any] | None]

_validate_block = Block.__pydantic_validator__.validate_python  # model_validate minus its wrapper


def fields_of_model(block: Block) -> BlockFields:
    """The fields of a Block model."""
    table = block.table
    return (
        block.block_id, block.type, block.text, block.hierarchy_path, block.provenance.page_number,
        block.confidence.overall, None if table is None else table.cells,
    )


def fields_of_dict(block: dict[str, Any]) -> BlockFields:
    """The fields of a dict validated by ``validate_block_dict``, with Block's None handling
    (text ``""``, path ``[]``, page 1, confidence 1.0)."""
    provenance, confidence, table = block["provenance"], block["confidence"], block["table"]
    return (
        block["block_id"], block["type"], block["text"] or "", block["hierarchy_path"] or [],
        1 if provenance is None else provenance["page_number"],
        1.0 if confidence is None else confidence["overall"],
        None if table is None else table["cells"],
    )


class BlockIntake:
    """The caller's blocks as :data:`BlockFields`, validated on the way (see module doc)."""

    __slots__ = ("blocks", "count", "seconds")

    def __init__(self, blocks: Iterable[Block | dict[str, Any]]) -> None:
        self.blocks = blocks
        self.count = 0
        self.seconds = 0.0

    def fields(self) -> Iterable[BlockFields]:
        """A list of Block models is mapped directly (the worker's input); anything else goes
        through the per-item validation of :meth:`__iter__`."""
        blocks = self.blocks
        if isinstance(blocks, list) and set(map(type, blocks)) <= {Block}:
            self.count = len(blocks)
            return map(fields_of_model, blocks)
        return self

    def __iter__(self) -> Iterator[BlockFields]:
        fast, clock = validate_block_dict, time.perf_counter
        for block in self.blocks:
            self.count += 1
            if isinstance(block, Block):
                yield fields_of_model(block)
                continue
            start = clock()
            try:
                fields = fields_of_dict(fast(block))
            except ValidationError:
                fields = fields_of_model(_validate_block(block))  # raises Block's own error
            self.seconds += clock() - start
            yield fields
