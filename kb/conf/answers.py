"""The grounded-answer rows of the settings table (docs/answers.md): the model server, its
budgets and how many answers run at once."""

from __future__ import annotations

from dataclasses import dataclass

from kb.errors import ConfigurationError
from kb.settings_table import HTTP_URL, at_least, lowered, matches, one_of, setting, stripped, url


def _timeouts(value: str) -> tuple[float, float, float]:
    """KB_ANSWER_TIMEOUT: "connect,first token,total" in seconds; one number is all three."""
    parts = [part.strip() for part in str(value).split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError as exc:
        raise _bad_timeouts(value) from exc
    if len(numbers) == 1:
        numbers *= 3
    if len(numbers) != 3 or not all(0 < number <= 3600 for number in numbers):
        raise _bad_timeouts(value)
    return numbers[0], numbers[1], numbers[2]


def _bad_timeouts(value) -> ConfigurationError:
    return ConfigurationError(
        "KB_ANSWER_TIMEOUT is three numbers of seconds, connect,first-token,total (e.g. 5,60,180), "
        f"each above 0 and at most 3600, got {value!r}.",
        details={"setting": "KB_ANSWER_TIMEOUT"},
    )


@dataclass(frozen=True)
class AnswerSettings:
    """The grounded-answer rows: the model server, its budgets, answers at once."""

    answer_url: str = setting(  # "": answers are off
        "KB_ANSWER_URL",
        "",
        "the base URL of an OpenAI-compatible chat-completions server for grounded answers "
        "(`http://127.0.0.1:11434/v1`); empty: answers are off ([answers](answers.md))",
        read=url,
        check=matches(
            HTTP_URL,
            "the http(s) base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1",
        ),
    )
    answer_model: str = setting(
        "KB_ANSWER_MODEL",
        "",
        "the model name the server serves (its `/v1/models` lists them); needed when "
        "`KB_ANSWER_URL` is set",
        read=stripped,
    )
    answer_api_key: str = setting(
        "KB_ANSWER_API_KEY",
        "",
        "sent as `Authorization: Bearer …` to the answer server; from the environment only",
        secret=True,
    )
    answer_context_tokens: int = setting(
        "KB_ANSWER_CONTEXT_TOKENS",
        8192,
        "the model's context length as the server runs it: the prompt, the reads and the answer "
        "must fit; a prompt that cannot fails with `ANSWER_PROMPT_TOO_LARGE`",
        check=at_least(512),
    )
    answer_max_tokens: int = setting(
        "KB_ANSWER_MAX_TOKENS",
        512,
        "the longest answer asked for, kept free in the context",
        check=at_least(16),
    )
    answer_timeouts: tuple[float, float, float] = setting(
        "KB_ANSWER_TIMEOUT",
        "5,60,180",
        "seconds to connect, to the first token, for the whole answer (one number: all three)",
        convert=_timeouts,
    )
    answer_concurrency: int = setting(
        "KB_ANSWER_CONCURRENCY",
        4,
        "answers under way at once in one web process (each holds a worker and a database "
        "connection while the model writes, up to `KB_ANSWER_TIMEOUT`); one more is refused "
        "with `ANSWER_BUSY` (429, `Retry-After`) before anything is searched",
        check=at_least(1),
    )
    answer_tools: str = setting(
        "KB_ANSWER_TOOLS",
        "auto",
        "whether the server is sent the capped `read` tool: `auto` (falls back when the server "
        "refuses tools), `on`, `off`",
        read=lowered,
        check=one_of("auto", "on", "off"),
    )


def check_answers(conf: AnswerSettings) -> None:
    """The checks that need two answer settings."""
    if conf.answer_url and not conf.answer_model:
        raise ConfigurationError(
            "KB_ANSWER_URL is set but KB_ANSWER_MODEL is empty: name the model the server "
            "serves (its /v1/models lists them).",
            details={"setting": "KB_ANSWER_MODEL"},
        )
    if conf.answer_max_tokens >= conf.answer_context_tokens:
        raise ConfigurationError(
            f"KB_ANSWER_MAX_TOKENS ({conf.answer_max_tokens}) must be below "
            f"KB_ANSWER_CONTEXT_TOKENS ({conf.answer_context_tokens}): the prompt needs room too.",
            details={"setting": "KB_ANSWER_MAX_TOKENS"},
        )
