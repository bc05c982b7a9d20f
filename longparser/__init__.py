"""LongParser chunking engine: structure-aware, token-budgeted chunks for retrieval.

The engine is pure: blocks and config in, :class:`schemas.ChunkResult` out. External
resources (word list, language-ID model, sentence encoder) are loaded by
:mod:`longparser.resources` and passed in; the engine itself reads no files and no
environment.
"""

from longparser.pipeline import chunk_blocks, chunk_request
from longparser.resources import Resources

__all__ = ["Resources", "chunk_blocks", "chunk_request"]
