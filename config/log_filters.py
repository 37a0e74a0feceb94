"""One readable line per log record: a message longer than `MAX_MESSAGE_CHARS` (a request line
carrying a 16,000-character query, the search page's GET) is cut where it is written, with its full
length said. The record itself is left whole for any other handler; the search log keeps the
query; a traceback is written in full after the message."""

from __future__ import annotations

import logging

from django.utils.log import ServerFormatter

MAX_MESSAGE_CHARS = 1000


def _cut(text: str) -> str:
    return (
        text
        if len(text) <= MAX_MESSAGE_CHARS
        else f"{text[:MAX_MESSAGE_CHARS]}… [{len(text)} characters]"
    )


class ShortFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        return _cut(super().formatMessage(record))


class ShortServerFormatter(ServerFormatter):
    """Django's development server's request lines, cut the same way."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return _cut(super().formatMessage(record))
