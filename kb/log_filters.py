"""What the logs write per record stays one readable line: a request line carrying a 16,000-character
query (the search page's GET) is cut, with its full length said; the search log keeps the query."""

from __future__ import annotations

import logging

MAX_MESSAGE_CHARS = 1000


class ShortMessages(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > MAX_MESSAGE_CHARS:
            record.msg, record.args = f"{message[:MAX_MESSAGE_CHARS]}… [{len(message)} characters]", ()
        return True
