"""The one formatter of pydantic errors (schemas.problems) and the layers that use it."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError, model_validator

from schemas.problems import MAX_PROBLEMS, describe_validation_error, error_location


class Item(BaseModel):
    pages: list[int]


class Doc(BaseModel):
    items: list[Item]
    low: int = 0
    high: int = 0

    @model_validator(mode="after")
    def ordered(self) -> Doc:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high\n({self.high})")
        return self


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Doc.model_validate(data)
    return caught.value


def test_locations_read_as_paths_and_a_cross_field_check_by_its_message_alone() -> None:
    assert error_location(("items", 3, "pages", 0)) == "items[3].pages[0]"
    assert error_location(("__root__",)) == ""
    assert describe_validation_error(_error({"items": [{"pages": [1, "x"]}]})) == (
        "items[0].pages[1]: Input should be a valid integer, unable to parse string as an integer")
    cross_field = _error({"items": [], "low": 2, "high": 1})
    assert describe_validation_error(cross_field) == "low (2) is above high (1)"


def test_at_most_max_problems_are_named() -> None:
    broken = {"items": [{"pages": ["x"]} for _ in range(MAX_PROBLEMS + 2)]}
    message = describe_validation_error(_error(broken))
    assert message.count("Input should be") == MAX_PROBLEMS and message.endswith("; ... and 2 more")
    assert "\n" not in message
