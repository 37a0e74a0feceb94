"""Request shapes of the eval endpoint."""

from ninja import Field, Schema


class EvalRunIn(Schema):
    suite: dict
    namespace: str | None = Field(None, max_length=128)
