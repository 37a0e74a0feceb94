"""Request and response shapes of the answer endpoints."""

from ninja import Field, Schema

from answers.service import MAX_NAMESPACES
from retrieval.query import MAX_QUERY_CHARS


class AnswerIn(Schema):
    q: str = Field(
        ...,
        description=f"The question: at most {MAX_QUERY_CHARS} characters once normalised (NFKC)",
    )
    namespaces: list[str] = Field(
        default_factory=list,
        max_length=MAX_NAMESPACES,
        description="The namespaces to answer from; none: every one the caller reads "
        f"(at most {MAX_NAMESPACES})",
    )
    stream: bool = Field(
        False,
        description="true: text/event-stream, one server-sent event per answer event; "
        "false: the answer's final state as one JSON object",
    )


class AnswerToolIn(Schema):
    """The MCP `answer` tool's arguments: /api/answer's, without `stream` (a tool answers whole)."""

    q: str = Field(
        ...,
        description=f"The question: at most {MAX_QUERY_CHARS} characters once normalised (NFKC)",
    )
    namespaces: list[str] = Field(
        default_factory=list,
        max_length=MAX_NAMESPACES,
        description="The namespaces to answer from; none: every one the caller reads "
        f"(at most {MAX_NAMESPACES})",
    )


class GateOut(Schema):
    answer: bool
    rule: str
    reason: str


class AnswerSourceOut(Schema):
    n: int
    title: str
    url: str  # where the citation opens: the passage's anchor, or the PDF page
    document_id: int
    chunk_id: int
    namespace: str


class CheckOut(Schema):
    source: int
    holds: bool
    share: float
    reason: str


class SentenceOut(Schema):
    text: str
    citations: list[int]
    verdict: str  # supported | unsupported | dropped | abstention
    reason: str
    checks: list[CheckOut]


class ErrorOut(Schema):
    code: str
    message: str


class AnswerOut(Schema):
    """An answer's final state: what the stream's events add up to. An error of the model (off, dead,
    too slow, a prompt too large) is in `error`; the gate and the sources found stay."""  # noqa: E501

    answer_id: int | None
    query_id: int | None
    gate: GateOut | None
    sources: list[AnswerSourceOut]
    left_out: int = 0  # sources found that did not fit in the model's context
    abstained: bool = False
    text: str = ""  # every sentence but the dropped ones; never HTML
    sentences: list[SentenceOut] = []
    counts: dict[str, int] = {}
    error: ErrorOut | None = None


class AnswerFeedbackIn(Schema):
    answer_id: int = Field(..., ge=1)
    helpful: bool


class AnswerFeedbackOut(Schema):
    answer_id: int
    helpful: bool
