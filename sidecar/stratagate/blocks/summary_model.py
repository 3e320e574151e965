"""What the model must return for a block: L0 title and tags, L1 summary, L2 key facts."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=400)]


class BlockSummary(BaseModel):
    """Arguments of the forced ``stratagate_summarize_block`` call."""

    model_config = ConfigDict(extra="ignore")

    title: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)] = Field(
        description="L0: a short, specific title for this part of the conversation (max 120 characters)."
    )
    tags: list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]] = Field(
        default_factory=list, max_length=12, description="L0: up to 12 short topic tags."
    )
    summary: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)] = Field(
        description="L1: a narrative summary in a few sentences: what was asked, done and decided."
    )
    key_facts: list[Line] = Field(
        min_length=1,
        max_length=20,
        description=(
            "L2: the durable facts as self-contained lines: decisions and their reasons, preferences, "
            "constraints, names, numbers, dates, file paths, outcomes and unresolved work."
        ),
    )
    has_durable_facts: bool = Field(
        description="True when this block holds decisions, preferences, plans or changes worth remembering."
    )

    @field_validator("tags")
    @classmethod
    def _dedupe_tags(cls, tags: list[str]) -> list[str]:
        seen: dict[str, str] = {}
        for tag in tags:
            seen.setdefault(tag.lower(), tag)
        return list(seen.values())
