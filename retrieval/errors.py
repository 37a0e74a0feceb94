"""Search errors: stable codes the API maps to HTTP statuses."""

from kb.errors import KBError


class SearchError(KBError):
    code = "SEARCH_FAILED"
    http_status = 400


class InvalidQuery(SearchError):
    code = "SEARCH_INVALID_QUERY"
    http_status = 422


class QueryTooLong(SearchError):
    code = "SEARCH_QUERY_TOO_LONG"
    http_status = 413


class UnknownNamespace(SearchError):
    code = "SEARCH_UNKNOWN_NAMESPACE"
    http_status = 404


class InvalidRankerParams(SearchError):
    code = "SEARCH_INVALID_PARAMS"
    http_status = 422


class InvalidGroup(InvalidQuery):
    """A `group` that is neither chunk nor document."""

    code = "SEARCH_INVALID_GROUP"
    http_status = 422


class EmptyQuery(InvalidQuery):
    """A query with no words once normalised."""

    code = "SEARCH_EMPTY_QUERY"
    http_status = 422


class InvalidLimit(InvalidQuery):
    """A result limit out of range."""

    code = "SEARCH_INVALID_LIMIT"
    http_status = 422
