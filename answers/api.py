"""The answer endpoints: one question answered, streamed or whole, and a reader's vote on it."""

import json

from django.http import StreamingHttpResponse
from ninja import Router

from answers.feedback import record_feedback
from answers.schemas import AnswerFeedbackIn, AnswerFeedbackOut, AnswerIn, AnswerOut
from answers.service import answer_events, final_state
from answers.slots import Held

router = Router(tags=["answers"])


@router.post(
    "/answer",
    response=AnswerOut,
    summary="A grounded answer with checked citations",
    description="Searches the namespaces with the caller's rights, answers only when the results "
    "are strong enough (else says the knowledge base does not cover it, with the closest "
    "passages), and checks every sentence's citation. `stream: true` answers `text/event-stream`: "
    "events `gate`, `sources`, `delta` (text as it comes), `answer` (sentences with verdicts and "
    "counts), `done` (the answer's id), or `error` with a stable code. Text is never HTML.",
    openapi_extra={
        "responses": {
            200: {
                "content": {
                    "text/event-stream": {
                        "schema": {
                            "type": "object",
                            "required": ["event"],
                            "properties": {
                                "event": {
                                    "type": "string",
                                    "enum": ["gate", "sources", "delta", "answer", "done", "error"],
                                }
                            },
                            "description": "Each server-sent event's data: a JSON object naming "
                            "its `event`, with that event's fields.",
                        }
                    }
                }
            }
        }
    },
)
def answer(request, data: AnswerIn):
    events = answer_events(request, data.namespaces, data.q, stream=data.stream)
    if not data.stream:
        return final_state(events)
    # the iterator's own close() releases the answer's slot, even if the stream never begins
    rendered = (
        events.rendered(_sse) if isinstance(events, Held) else (_sse(event) for event in events)
    )
    response = StreamingHttpResponse(rendered, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx passes each event on at once
    return response


@router.post(
    "/answer/feedback",
    response=AnswerFeedbackOut,
    summary="A reader's thumbs up or down on an answer",
)
def feedback(request, data: AnswerFeedbackIn):
    row = record_feedback(request, data.answer_id, data.helpful)
    return {"answer_id": row.pk, "helpful": row.helpful}


def _sse(event: dict) -> str:
    return f"event: {event['event']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
