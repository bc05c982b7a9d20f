"""A tokenizer declaration: the file a token counter is loaded from, and what the file lacks.

The same shape serves a worker fleet's ``LONGPARSER_TOKENIZERS`` (name -> declaration) and a
declaration file the library and the command line accept as ``token_counter`` (a ``.json``
file holding one). ``loaders.tokenizers`` loads it (docs/tokenizers.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TokenizerKind = Literal["hf", "st", "tiktoken"]
SHA256_PATTERN = r"^[0-9a-f]{64}$"
MAX_WINDOW = 10_000_000


class TokenizerSpec(BaseModel):
    """One tokenizer, by kind.

    Attributes:
        path: ``hf``: a Hugging Face ``tokenizer.json`` or the model directory holding it;
            ``st``: a sentence-transformers model directory; ``tiktoken``: a tiktoken BPE file.
        kind: ``hf`` (the ``tokenizers`` library), ``st`` (the tokenizer of a
            sentence-transformers directory, its own max_seq_length and lower-casing) or
            ``tiktoken``.
        sha256: the digest of the tokenizer file (``tokenizer.json`` or the BPE file), checked
            at load; workers require it.
        window: the model's window in tokens, special tokens included. ``hf`` and ``st`` read
            it from the model's own config files when absent; ``tiktoken`` needs it.
        pattern: ``tiktoken`` only: the pre-tokenizer's regex, or the name of one of tiktoken's
            own (``r50k_base``, ``p50k_base``, ``cl100k_base``, ``o200k_base``).
        special_tokens: ``tiktoken`` only: special token -> rank (the BPE file holds none).
        add_special_tokens: ``tiktoken`` only: the special tokens the model adds to every input
            (they count); tiktoken itself adds none.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1, max_length=4096)
    kind: TokenizerKind
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)
    window: int | None = Field(default=None, ge=1, le=MAX_WINDOW)
    pattern: str | None = Field(default=None, min_length=1)
    special_tokens: dict[str, int] = Field(default_factory=dict)
    add_special_tokens: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _kind_needs(self) -> TokenizerSpec:
        if self.kind == "tiktoken":
            missing = [name for name in ("window", "pattern") if getattr(self, name) is None]
            if missing:
                raise ValueError(f"a tiktoken tokenizer needs {' and '.join(missing)} "
                                 "(the BPE file holds neither)")
            unknown = [token for token in self.add_special_tokens if token not in self.special_tokens]
            if unknown:
                raise ValueError(f"add_special_tokens {unknown} are not among special_tokens")
        elif self.pattern is not None or self.special_tokens or self.add_special_tokens:
            raise ValueError(f"pattern, special_tokens and add_special_tokens are for tiktoken files; "
                             f"a {self.kind} tokenizer has its own")
        return self
