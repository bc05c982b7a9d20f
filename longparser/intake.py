"""Stage 1: intake, the caller's blocks validated, as the fields the later stages read.

``chunk_blocks`` takes Block models or plain dicts in LongParser's dump shape. Either way the
stages read a block as the dict of its fields: a model's own field dict, or a plain dict
validated into that shape by the validator derived from :class:`~schemas.Block` (same types,
constraints, aliases and defaults). A block that does not validate, a block id seen before in
the document, or a whole input passed where blocks are expected (a LongParser dump, a
ChunkRequest, a DoclingDocument) raise :class:`~schemas.InputError` with the one-line message
the command line prints (``block 3 (id 'b-3'): table.cells[0].row_index: Field required``).
Blocks are read one at a time as prepare asks for them:
nothing is held for the whole document beyond what the stages keep, so memory stays flat on
large inputs. :attr:`BlockIntake.seconds` is the time spent validating.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from schemas import Block, InputError
from schemas.blocks import BlockIds, validate_block_fields
from schemas.inputs import describe_block_error, not_a_block_sequence


class BlockIntake:
    """The caller's blocks as field dicts, plain dicts validated on the way (see module doc)."""

    __slots__ = ("block_ids", "blocks", "count", "seconds")

    def __init__(self, blocks: Iterable[Block | dict[str, Any]]) -> None:
        problem = not_a_block_sequence(blocks)
        if problem:
            raise InputError(problem)
        self.blocks = blocks
        self.block_ids = BlockIds()
        self.count = 0
        self.seconds = 0.0

    def _refused(self, block: Any, index: int) -> InputError:
        """The error of a block the field validator refused: Block's own (its messages and
        locations), in one line."""
        try:
            Block.model_validate(block)
        except ValidationError as exc:
            return InputError(describe_block_error(exc, index, block))
        raise AssertionError("a block the field validator refused passed Block's validation")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        clock = time.perf_counter
        validate = validate_block_fields
        add_id = self.block_ids.add
        for index, block in enumerate(self.blocks):
            self.count += 1
            if isinstance(block, Block):
                fields = block.__dict__
            else:
                start = clock()
                try:
                    fields = validate(block)
                except ValidationError:
                    raise self._refused(block, index) from None
                self.seconds += clock() - start
            try:
                add_id(fields["block_id"], index)
            except ValueError as exc:
                raise InputError(str(exc)) from None
            yield fields
        self.block_ids = BlockIds()  # every block read: the document's ids need not be held to its end
