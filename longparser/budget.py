"""The budget of one request: ``max_tokens`` less ``reserve_tokens`` in its counter, a target or
(strict) a maximum.

Stages ask the budget whether a group of blocks fits: by default by the sum of the blocks' own
counts, a packing target (the target exceptions, docs/strict.md, say where a chunk may go
over it); with ``strict_max_tokens`` by the count of the chunk text they would make, as it will
be emitted (with its heading breadcrumb when ``heading_context`` is on), a maximum. Whether the
budget is a target or a maximum is decided here only: a stage asks :meth:`Budget.packer`,
:meth:`Budget.accepts` or :meth:`Budget.prefix_fits`, never the config.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

from longparser.breadcrumbs import BREADCRUMB_SEPARATOR, breadcrumb
from longparser.build import Draft
from longparser.errors import RequestRefused
from longparser.repeats import RepeatAllowance
from longparser.tokens import TokenCounter, count

REPEAT_SHARE = 0.5  # repeated text (breadcrumb, lead-in, header line) may take this much

T = TypeVar("T")


class Budget:
    """What a chunk may count with ``counter`` for one request (see the module doc).

    Attributes:
        chunk_limit: ``max_tokens`` less ``reserve_tokens`` (``ChunkingConfig.chunk_budget``).
        strict: ``chunk_limit`` is a maximum of every chunk's emitted text (else a target).
        with_breadcrumb: the emitted text counted in strict mode is ``embed_text``.
        repeat_tokens: the most tokens repeated text may take in a strict chunk.
        repeats: the characters of repeated text the call may still write whole
            (:mod:`longparser.repeats`).
    """

    def __init__(
        self, chunk_limit: int, counter: TokenCounter, *, strict: bool, with_breadcrumb: bool
    ) -> None:
        self.chunk_limit, self.counter = chunk_limit, counter
        self.strict, self.with_breadcrumb = strict, with_breadcrumb
        self.repeat_tokens = max(1, int(chunk_limit * REPEAT_SHARE))
        self.repeats = RepeatAllowance()
        self._measure = lru_cache(maxsize=4096)(lambda text: counter.measure((text,))[0])
        if strict and (smallest := count(counter, "a")) > chunk_limit:
            raise RequestRefused(
                f"{self.described_limit()} leaves no room for text with the {counter.name} counter: "
                f"one character already counts {smallest}"
            )

    def described_limit(self) -> str:
        """The limit as a refusal names it: ``chunk limit 251 (max_tokens less reserve_tokens)``."""
        return f"chunk limit {self.chunk_limit} (max_tokens less reserve_tokens)"

    def measure(self, text: str) -> int:
        """The counter's units of one text (memoised: repeated text is measured again and again)."""
        return self._measure(text)

    def count(self, text: str) -> int:
        return count(self.counter, text)

    def cost(self, draft: Draft) -> int:
        """The count of ``draft``'s text as it will be emitted (with its breadcrumb, if any).

        An additive counter joins the units alone: the text is not even built.
        """
        units = draft.units()
        crumb = ""
        if self.with_breadcrumb:
            titles = breadcrumb(draft)
            if titles:
                crumb = BREADCRUMB_SEPARATOR.join(titles)
                units.append(self.measure(crumb))
        if self.counter.additive:
            return self.counter.count_joined("", units)
        text = crumb + BREADCRUMB_SEPARATOR + draft.text if crumb else draft.text
        return self.counter.count_joined(text, units)

    def fits(self, draft: Draft) -> bool:
        """Whether ``draft``'s emitted text counts at most :attr:`chunk_limit`."""
        return self.cost(draft) <= self.chunk_limit

    def accepts(self, draft: Draft) -> bool:
        """Whether a finished ``draft`` (a merge, a schema) may be emitted as it is: always with a
        target (the target exceptions), within the maximum in strict mode."""
        return not self.strict or self.fits(draft)

    def prefix_room(self, draft: Draft, cap: int | None) -> int | None:
        """With an additive counter, the most units a prefix put before ``draft`` may measure
        (within ``cap`` tokens on its own, and in strict mode with ``draft`` within the maximum);
        None when there is no limit or the counter is not additive (then texts are counted)."""
        if not self.counter.additive or (cap is None and not self.strict):
            return None
        count_joined = self.counter.count_joined
        base = [p.units for p in draft.parts]
        # the breadcrumb as it will be with the prefix: a heading the text starts with no
        # longer stands first, so its title is written in the breadcrumb too
        if self.with_breadcrumb and (titles := breadcrumb(draft, prefixed=True)):
            base.append(self.measure(BREADCRUMB_SEPARATOR.join(titles)))

        def ok(units: int) -> bool:
            if cap is not None and count_joined("", [units]) > cap:
                return False
            return not self.strict or count_joined("", [*base, units]) <= self.chunk_limit

        low, high = -1, self.chunk_limit  # a text of more units than the limit never fits
        while low < high:  # the most units that are ok (counts grow with units)
            middle = (low + high + 1) // 2
            if ok(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def prefix_fits(self, draft: Draft, text: str, separator: str, cap: int | None) -> bool:
        """Whether ``text`` (then ``separator``) may go before ``draft``'s body: within ``cap``
        tokens on its own, and in strict mode with ``draft`` within the maximum."""
        if cap is not None and self.count(text) > cap:
            return False
        if not self.strict:
            return True
        return self.fits(draft.evolve(prefix=text + separator, prefix_units=self.measure(text)))

    def packer(self, draft_of: Callable[[list[T]], Draft]) -> Callable[[list[T], T, int], bool]:
        """``fits(group, upcoming, summed_tokens)`` for packing: whether ``group`` with
        ``upcoming`` appended fits: the per-block sum against the target, or (strict) the
        emitted count of the draft ``draft_of(group + [upcoming])`` against the maximum."""
        if not self.strict:
            return lambda _group, _upcoming, summed: summed <= self.chunk_limit
        return lambda group, upcoming, _summed: self.fits(draft_of([*group, upcoming]))
