"""The answer model: any OpenAI-compatible chat-completions server, called over HTTP with deadlines.

The endpoint is the operator's (KB_ANSWER_URL), never a reader's, so it may be on loopback or a
private network. Answers are always streamed, so the first-token deadline can be held. Every failure
is one of answers/errors.py's stable codes.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import httpx

from answers.errors import ModelFailed, ModelMalformed, ModelTimeout, ModelUnreachable

logger = logging.getLogger(__name__)
TOOL_REFUSALS = (
    400,
    404,
    422,
    501,
)  # statuses a server without tool calling answers a request with tools


@dataclass(frozen=True)
class Endpoint:
    url: str  # the base URL, …/v1
    model: str
    api_key: str = ""
    timeouts: tuple[float, float, float] = (5.0, 60.0, 180.0)  # connect, first token, total

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str = ""


@dataclass
class Turn:
    """What one request to the model produced: its text, its tool calls, why it stopped."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = ""
    first_token_s: float | None = None  # from sending the request to the first text or tool call


class ToolsRefused(Exception):
    """The server refused a request because it carried tools (it has no tool calling)."""


def chat(
    endpoint: Endpoint,
    messages: list[dict],
    *,
    max_tokens: int,
    tools: list[dict] | None,
    deadline: float,
) -> Generator[str, None, Turn]:
    """One streamed chat completion: yields each piece of text as it comes and returns the Turn
    (`turn = yield from chat(...)`). `deadline` (time.monotonic) bounds the whole answer across
    turns."""
    connect, first_token, _ = endpoint.timeouts
    body = {
        "model": endpoint.model,
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": True,
        "temperature": 0,
    }
    if tools:
        body["tools"] = tools
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _total_timeout(endpoint)
    timeout = httpx.Timeout(
        connect=min(connect, remaining),
        read=min(first_token, remaining),
        write=min(connect, remaining),
        pool=min(connect, remaining),
    )
    started = time.monotonic()
    turn = Turn()
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client,
            client.stream(
                "POST", f"{endpoint.url}/chat/completions", json=body, headers=endpoint.headers()
            ) as response,
        ):
            if response.status_code >= 400:
                detail = response.read()[:300].decode("utf-8", "replace")
                # the server's own words stay in the server log: they may carry its internals
                logger.warning(
                    "answer model %s answered HTTP %s: %r",
                    endpoint.model,
                    response.status_code,
                    detail,
                )
                if tools and response.status_code in TOOL_REFUSALS:
                    raise ToolsRefused(detail)
                raise ModelFailed(
                    f"The answer model's server answered HTTP {response.status_code}; "
                    "its message is in the server log.",
                    details={"status": response.status_code},
                )
            for event in _events(response):
                if time.monotonic() > deadline:
                    raise _total_timeout(endpoint)
                yield from _apply(event, turn, started)
    except httpx.ConnectTimeout as exc:
        logger.warning("answer model at %s: no connection within %s s", endpoint.url, connect)
        raise ModelUnreachable(
            f"The answer model did not accept a connection within {connect} s."
        ) from exc
    except httpx.ConnectError as exc:
        logger.warning("answer model at %s cannot be reached: %s", endpoint.url, exc)
        raise ModelUnreachable("The answer model's server cannot be reached.") from exc
    except httpx.ReadTimeout as exc:
        if turn.first_token_s is None:
            raise ModelTimeout(
                f"The answer model sent no token within {first_token} s (KB_ANSWER_TIMEOUT).",
                details={"deadline": "first_token", "seconds": first_token},
            ) from exc
        raise ModelTimeout(
            f"The answer model stopped sending for {first_token} s mid-answer (KB_ANSWER_TIMEOUT).",
            details={"deadline": "first_token", "seconds": first_token},
        ) from exc
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        logger.warning("answer model %s broke the connection: %s", endpoint.model, exc)
        raise ModelMalformed("The answer model's server broke the connection.") from exc
    if not turn.finish_reason and not turn.text and not turn.tool_calls:
        raise ModelMalformed(
            "The answer model's stream ended without a choice: not a chat-completions stream."
        )
    return turn


def models(endpoint: Endpoint) -> list[str]:
    """The model names the server lists (GET …/models): the start-up check and /healthz."""
    connect = endpoint.timeouts[0]
    try:
        response = httpx.get(
            f"{endpoint.url}/models", headers=endpoint.headers(), timeout=connect, trust_env=False
        )
    except httpx.TimeoutException as exc:
        raise ModelUnreachable(
            f"The answer model's server did not answer within {connect} s."
        ) from exc
    except httpx.HTTPError as exc:
        logger.warning("answer model at %s cannot be reached: %s", endpoint.url, exc)
        raise ModelUnreachable("The answer model's server cannot be reached.") from exc
    if response.status_code >= 400:
        raise ModelFailed(
            f"The answer model's server answered HTTP {response.status_code} to GET /models.",
            details={"status": response.status_code},
        )
    try:
        return [str(entry["id"]) for entry in response.json().get("data", [])]
    except (ValueError, AttributeError, KeyError, TypeError) as exc:
        raise ModelMalformed("The answer model's GET /models is not an OpenAI model list.") from exc


def _events(response: httpx.Response) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream's `data:` lines, up to `[DONE]`."""
    for line in response.iter_lines():
        if not line.startswith("data:"):
            continue  # comments, event names, keep-alives
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError as exc:
            logger.warning("answer model stream line is not JSON: %r", data[:300])
            raise ModelMalformed(
                "The answer model's stream holds a line that is not JSON."
            ) from exc
        if not isinstance(event, dict):
            raise ModelMalformed(
                f"The answer model's stream holds {type(event).__name__}, not a chunk object."
            )
        if "error" in event:
            logger.warning(
                "answer model reported an error mid-stream: %s", str(event["error"])[:300]
            )
            raise ModelFailed(
                "The answer model reported an error mid-answer; its message is in the server log."
            )
        yield event


def _apply(event: dict, turn: Turn, started: float) -> Iterator[str]:
    choices = event.get("choices")
    if not isinstance(choices, list):
        raise ModelMalformed("A chunk of the answer model's stream has no `choices` list.")
    for choice in choices:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            raise ModelMalformed("A choice of the answer model's stream has no `delta` object.")
        text = delta.get("content")
        if isinstance(text, str) and text:
            if turn.first_token_s is None:
                turn.first_token_s = time.monotonic() - started
            turn.text += text
            yield text
        for call in delta.get("tool_calls") or []:
            if turn.first_token_s is None:
                turn.first_token_s = time.monotonic() - started
            _tool_piece(turn, call)
        if choice.get("finish_reason"):
            turn.finish_reason = str(choice["finish_reason"])


def _tool_piece(turn: Turn, call) -> None:
    """Tool calls come in pieces: the first names the call, the rest add to its arguments."""
    if not isinstance(call, dict):
        raise ModelMalformed("A tool call of the answer model's stream is not an object.")
    index = call.get(
        "index", len(turn.tool_calls) if call.get("id") else max(len(turn.tool_calls) - 1, 0)
    )
    function = call.get("function") or {}
    while len(turn.tool_calls) <= index:
        turn.tool_calls.append(ToolCall(id="", name=""))
    current = turn.tool_calls[index]
    current.id = call.get("id") or current.id
    current.name = function.get("name") or current.name
    current.arguments += function.get("arguments") or ""


def _total_timeout(endpoint: Endpoint) -> ModelTimeout:
    total = endpoint.timeouts[2]
    return ModelTimeout(
        f"The answer took longer than {total} s (KB_ANSWER_TIMEOUT).",
        details={"deadline": "total", "seconds": total},
    )
