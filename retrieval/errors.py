"""Search errors: stable codes the API maps to HTTP statuses."""

from kb.errors import KBError


class SearchError(KBError):
    """The base of the search errors: a query the search could not run."""

    code = "SEARCH_FAILED"
    http_status = 400


class InvalidQuery(SearchError):
    """A query that cannot be searched as sent: it holds a NUL character (sent through MCP or the
    Python API; in a URL, `KB_BAD_REQUEST` refuses it first)."""

    code = "SEARCH_INVALID_QUERY"
    http_status = 422


class QueryTooLong(SearchError):
    """A query longer than `retrieval.query.MAX_QUERY_CHARS` characters once normalised (NFKC)."""

    code = "SEARCH_QUERY_TOO_LONG"
    http_status = 413


class UnknownNamespace(SearchError):
    """A namespace that does not exist, or that this caller may not read: the two look the same."""

    code = "SEARCH_UNKNOWN_NAMESPACE"
    http_status = 404


class InvalidRankerParams(SearchError):
    """Ranker parameters out of their range."""

    code = "SEARCH_INVALID_PARAMS"
    http_status = 422


class InvalidGroup(InvalidQuery):
    """A `group` that is neither chunk nor document."""

    code = "SEARCH_INVALID_GROUP"
    http_status = 422


class EmptyQuery(InvalidQuery):
    """A query that is empty or only white space once normalised (punctuation alone is searched,
    and finds no strong match)."""

    code = "SEARCH_EMPTY_QUERY"
    http_status = 422


class InvalidLimit(InvalidQuery):
    """A result limit out of range."""

    code = "SEARCH_INVALID_LIMIT"
    http_status = 422


class FeedbackNotAResult(SearchError):
    """Feedback names a result that the logged search did not return."""

    code = "SEARCH_FEEDBACK_NOT_A_RESULT"
    http_status = 400
