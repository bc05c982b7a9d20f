"""The bound on repeated text: what one call may write again (docs/chunking.md, "Repeated text").

A chunk repeats text that is not its own content: a list's lead-in before each later piece, a
table's title and header line above each later batch, the column names in every row record,
a spanning cell's text at every position it covers, the key column in every column band, a
spanning header's text in every column it names, a section's titles in every chunk's
``section_path`` and heading breadcrumb. Each repetition is cheap for a real document and
unbounded for a crafted one: a short request can make a text of any length be written once per
row, item or chunk (a 112 KB table with ten 5,000-character column names wrote 100 MB of row
records).

The rule, the same for every kind of repetition: one call writes at most
:data:`REPEAT_ALLOWANCE_CHARS` characters of repeated text whole, plus
:data:`REPEATS_PER_INPUT_CHAR` per character of its input's text (block and cell texts, counted
as they are read), so a larger document may repeat more. Each stage asks the call's
:class:`RepeatAllowance` before it writes a repetition (:meth:`RepeatAllowance.take`, with the
characters the repetition costs, counted before anything is built); what the allowance cannot
hold is written in its short form instead (:func:`short_form`, or a table's plain form: see
:mod:`longparser.table_chunks`), so what the engine writes stays within a few times its input
whatever the request. A real document repeats a small fraction of the allowance and is chunked
as if there were none.

The other way a short request makes a large result is many small chunks: each chunk costs a
worker a few KB whatever its text (its model, metadata and quality scores, its JSON), so 1 MB of
one-word blocks with ``max_tokens`` 1 made 20,000 chunks and 100 MB. A call makes at most
:func:`chunk_cap` chunks: :data:`CHUNK_CAP_FLOOR` plus one per :data:`TEXT_CHARS_PER_CHUNK`
characters of input text (about one per 50 tokens); a request that would make more is refused
(``RequestRefused``, naming the numbers) before its chunks are built.
"""

from __future__ import annotations

from collections.abc import Sequence

CHUNK_CAP_FLOOR = 4_000
# Beyond the floor, one chunk per this many characters of input text (about 50 tokens): a long
# document chunked strictly to max_tokens 64 stays under the cap, while the most chunks a 1 MB
# request can make stay within a pool child's memory bound (bench/README.md, "Repeated text").
TEXT_CHARS_PER_CHUNK = 200
REPEAT_ALLOWANCE_CHARS = 2_000_000
REPEATS_PER_INPUT_CHAR = 4
SHORT_FORM_CHARS = 48  # a short form: the text's first words, at most this many characters
ELLIPSIS = "…"
DITTO = "〃"  # a table's plain form writes a text once; later copies read "same as before"
DITTO_MIN_CHARS = 4  # shorter texts are cheaper written again than a ditto mark with its reader


def short_form(text: str) -> str:
    """``text`` when it has at most :data:`SHORT_FORM_CHARS` characters, else its start cut at a
    word boundary (within the last half) and an ellipsis, :data:`SHORT_FORM_CHARS` in all."""
    if len(text) <= SHORT_FORM_CHARS:
        return text
    head = text[: SHORT_FORM_CHARS - len(ELLIPSIS) + 1]
    cut = head.rfind(" ")
    head = head[:cut] if cut >= SHORT_FORM_CHARS // 2 else head[:-1]
    return head.rstrip() + ELLIPSIS


def short_path(titles: Sequence[str]) -> list[str]:
    """A section path's (or breadcrumb's) short form: its innermost title's short form, after an
    ellipsis standing for the outer ones."""
    if not titles:
        return []
    return [ELLIPSIS, short_form(titles[-1])] if len(titles) > 1 else [short_form(titles[0])]


def chunk_cap(input_chars: int) -> int:
    """The most chunks a call with ``input_chars`` characters of input text may make."""
    return CHUNK_CAP_FLOOR + input_chars // TEXT_CHARS_PER_CHUNK


class RepeatAllowance:
    """The characters of repeated text one call may still write whole (``left``), and the
    characters of input text read so far (``input_chars``)."""

    __slots__ = ("input_chars", "left")

    def __init__(self, chars: int | None = None) -> None:
        self.left = REPEAT_ALLOWANCE_CHARS if chars is None else chars
        self.input_chars = 0

    def grow(self, input_chars: int) -> None:
        """Count ``input_chars`` more characters of input text (see the module doc)."""
        self.input_chars += input_chars
        self.left += REPEATS_PER_INPUT_CHAR * input_chars

    def take(self, chars: int) -> bool:
        """Whether a repetition of ``chars`` characters may be written whole (then it is counted);
        False: the caller writes the short form, and the allowance is left as it was."""
        if chars <= self.left:
            self.left -= chars
            return True
        return False
