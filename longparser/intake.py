"""Intake: the caller's blocks, validated, as the fields the stages read.

``chunk_blocks`` takes Block models or plain dicts in LongParser's dump shape. A dict is
validated into a Block (the one definition of the contract, with its own errors) as prepare
reads it, one block at a time: nothing is held for the whole document beyond what the
stages keep, so memory stays flat on large inputs. :attr:`BlockIntake.seconds` is the time
spent validating.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from schemas import Block

_validate_block = Block.__pydantic_validator__.validate_python  # model_validate minus its wrapper


class BlockIntake:
    """The caller's blocks as Block models, dicts validated on the way (see module doc)."""

    __slots__ = ("blocks", "count", "seconds")

    def __init__(self, blocks: Iterable[Block | dict[str, Any]]) -> None:
        self.blocks = blocks
        self.count = 0
        self.seconds = 0.0

    def __iter__(self) -> Iterator[Block]:
        clock = time.perf_counter
        for block in self.blocks:
            self.count += 1
            if not isinstance(block, Block):
                start = clock()
                block = _validate_block(block)
                self.seconds += clock() - start
            yield block
