"""LongParser chunking engine: structure-aware, token-budgeted chunks for retrieval.

The engine is pure: blocks and config in, :class:`schemas.ChunkResult` out. External
resources (word list, language-ID model, sentence encoder, the model's token counter) are
loaded by :mod:`loaders.resources` and passed in as a :class:`Resources`
(:mod:`longparser.resources` says what each must provide); the engine itself reads no files
and no environment.
"""

from longparser.pipeline import chunk_blocks, chunk_request
from longparser.resources import Resources

__all__ = ["Resources", "chunk_blocks", "chunk_request"]
