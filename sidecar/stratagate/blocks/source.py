"""The L5 record of a block: its messages exactly as captured."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel


class SourceMessage(BaseModel):
    id: int
    turn_seq: int
    role: Literal["user", "assistant", "tool"]
    content: str
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = None  # JSON text, as captured
    tool_result: str | None = None  # JSON text, as captured
    is_error: bool = False
    created_at: str

    @property
    def ref(self) -> str:
        return f"msg_{self.id}"

    def arguments_value(self) -> Any:
        return None if self.tool_arguments is None else json.loads(self.tool_arguments)

    def result_value(self) -> Any:
        return None if self.tool_result is None else json.loads(self.tool_result)

    def arguments_text(self) -> str:
        value = self.arguments_value()
        if value is None:
            return "{}"
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def result_text(self) -> str:
        value = self.result_value()
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.ref, "turn": self.turn_seq, "role": self.role, "created_at": self.created_at}
        if self.role == "tool":
            out.update(
                name=self.tool_name,
                call_id=self.tool_call_id,
                arguments=self.arguments_value(),
                result=self.result_value(),
                is_error=self.is_error,
            )
        else:
            out["content"] = self.content
        return out


ROW_COLUMNS = (
    "m.id, t.seq AS turn_seq, m.role, m.content, m.tool_name, m.tool_call_id, m.tool_arguments,"
    " m.tool_result, m.is_error, m.created_at"
)


def from_row(row: Any) -> SourceMessage:
    return SourceMessage(**{k: row[k] for k in row.keys()})
