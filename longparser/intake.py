"""Intake: the caller's blocks, validated, as the fields the stages read.

``chunk_blocks`` takes Block models or plain dicts in LongParser's dump shape. Either way the
stages read a block as the dict of its fields: a model's own field dict, or a plain dict
validated into that shape by the validator derived from :class:`~schemas.Block` (same types,
constraints, aliases and defaults; a dict it rejects is validated again by Block, so the
caller sees Block's own error). Blocks are read one at a time as prepare asks for them:
nothing is held for the whole document beyond what the stages keep, so memory stays flat on
large inputs. :attr:`BlockIntake.seconds` is the time spent validating.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import ValidationError

from schemas import Block
from schemas.blocks import validate_block_fields


class BlockIntake:
    """The caller's blocks as field dicts, plain dicts validated on the way (see module doc)."""

    __slots__ = ("blocks", "count", "seconds")

    def __init__(self, blocks: Iterable[Block | dict[str, Any]]) -> None:
        self.blocks = blocks
        self.count = 0
        self.seconds = 0.0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        clock = time.perf_counter
        for block in self.blocks:
            self.count += 1
            if isinstance(block, Block):
                yield block.__dict__
                continue
            start = clock()
            try:
                fields = validate_block_fields(block)
            except ValidationError:
                Block.model_validate(block)  # raises Block's own error
                raise
            self.seconds += clock() - start
            yield fields
