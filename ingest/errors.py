"""Ingest errors: each carries a stable code recorded on the run's per-item report."""

from kb.errors import KBError


class IngestError(KBError):
    """The base of every ingest error: a source or item that could not be ingested."""

    code = "INGEST_FAILED"
    http_status = 422


class FetchBlocked(IngestError):
    """The SSRF guard refused a URL (scheme, private address, too many redirects)."""

    code = "INGEST_FETCH_BLOCKED"
    http_status = 400


class InvalidUrl(FetchBlocked):
    """A URL that cannot be fetched as written: malformed, or an invalid international name."""

    code = "INGEST_URL_INVALID"
    http_status = 400


class FetchFailed(IngestError):
    """A fetch that did not deliver the page: a network error, a bad answer, a redirect problem."""

    code = "INGEST_FETCH_FAILED"
    http_status = 502


class ContentRejected(IngestError):
    """Content is too large, binary, or of a media type we do not extract."""

    code = "INGEST_CONTENT_REJECTED"
    http_status = 413


class BinaryContent(ContentRejected):
    """Bytes that are no text and no document type we read."""

    code = "INGEST_BINARY_CONTENT"
    http_status = 415


class EmptyContent(ContentRejected):
    """An item with no text left after extraction, or none that could be chunked."""

    code = "INGEST_EMPTY_CONTENT"
    http_status = 422


class ContentTooLarge(ContentRejected):
    """Content larger than the limit for its type (KB_FETCH_MAX_BYTES, KB_DOCUMENT_MAX_BYTES)."""

    code = "INGEST_TOO_LARGE"
    http_status = 413


class UnsupportedType(ContentRejected):
    """A media type or file suffix we do not read."""

    code = "INGEST_UNSUPPORTED_TYPE"
    http_status = 415


class DocumentEncrypted(ContentRejected):
    """The document needs a password to open (an owner password alone does not count)."""

    code = "INGEST_ENCRYPTED"
    http_status = 422


class DocumentCorrupt(ContentRejected):
    """A file whose structure its parser cannot read: truncated, damaged or not what its type
    says."""

    code = "INGEST_CORRUPT_FILE"
    http_status = 422


class NoTextLayer(ContentRejected):
    """A PDF whose pages are images: a scan without OCR."""

    code = "INGEST_NO_TEXT_LAYER"
    http_status = 422


class MacrosRefused(ContentRejected):
    """A macro-enabled Office file (.docm, .xlsm, .pptm or a vbaProject part) is not read."""

    code = "INGEST_MACROS_REFUSED"
    http_status = 422


class ParserBudgetExceeded(ContentRejected):
    """Parsing one item took more time or memory than its budget (KB_PARSER_*)."""

    code = "INGEST_PARSER_BUDGET"
    http_status = 422


class ConverterMissing(IngestError):
    """A file whose reader is an external program the server lacks (Asciidoctor for AsciiDoc):
    that file fails, the run goes on; the operator installs it (scripts/asciidoctor.sh)."""

    code = "INGEST_CONVERTER_MISSING"
    http_status = 501


class DocumentNotStored(ContentRejected):
    """The database refused one document's rows (a value it cannot hold); the rest of the batch is
    stored."""

    code = "INGEST_DOCUMENT_NOT_STORED"
    http_status = 422


class ArchiveRejected(ContentRejected):
    """A .zip upload that is a bomb, nests archives too deep, or holds unsafe paths."""

    code = "INGEST_ARCHIVE_REJECTED"
    http_status = 422


class IngestInternalError(IngestError):
    """An unexpected exception (a bug, here or in a library) while handling one item or source;
    the traceback is in the log."""

    code = "INGEST_INTERNAL_ERROR"
    http_status = 500


class RunAbandoned(IngestError):
    """The worker running an ingest died and no redelivery took the run up again."""

    code = "INGEST_RUN_ABANDONED"
    http_status = 500


class RunTimedOut(IngestError):
    """An ingest ran past its deadline (KB_TASK_TIMEOUT)."""

    code = "INGEST_RUN_TIMEOUT"
    http_status = 504


class DnsFailed(FetchBlocked):
    """The host name does not resolve, or resolves to no address."""

    code = "INGEST_DNS_FAILED"
    http_status = 400


class SchemeRefused(FetchBlocked):
    """A URL whose scheme is not http or https."""

    code = "INGEST_URL_SCHEME"
    http_status = 400


class UnknownSourceKind(IngestError):
    """A source kind no loader reads."""

    code = "INGEST_UNKNOWN_KIND"
    http_status = 422


class BadSitemap(ContentRejected):
    """A sitemap that is not valid, safe sitemap XML, or nests or fans out too far."""

    code = "INGEST_BAD_SITEMAP"
    http_status = 422


class RedirectLoop(FetchFailed):
    """Redirects that lead back to a URL already visited."""

    code = "INGEST_REDIRECT_LOOP"
    http_status = 502


class TooManyRedirects(FetchFailed):
    """More redirects than a fetch follows."""

    code = "INGEST_TOO_MANY_REDIRECTS"
    http_status = 502


class HttpStatusError(FetchFailed):
    """The server answered with an error status."""

    code = "INGEST_HTTP_STATUS"
    http_status = 502


class FetchTimeout(FetchFailed):
    """The server did not answer, or sent its body too slowly, within the time allowed."""

    code = "INGEST_FETCH_TIMEOUT"
    http_status = 504


class FileKeyInvalid(IngestError):
    """A stored file key that points outside the upload storage."""

    code = "INGEST_FILE_KEY_INVALID"
    http_status = 422


class FileMissing(IngestError):
    """An uploaded file that is no longer in storage."""

    code = "INGEST_FILE_MISSING"
    http_status = 422


class SourceUnreachable(IngestError):
    """A folder or repository source that could not be listed at all (missing, unreadable, the
    remote refused or did not answer): the run fails and nothing is deleted."""

    code = "INGEST_SOURCE_UNREACHABLE"
    http_status = 502


class LocationRefused(IngestError):
    """A folder outside the operator's KB_FOLDER_ROOTS, or a repository URL whose scheme the
    operator did not allow (KB_GIT_ALLOW_LOCAL)."""

    code = "INGEST_LOCATION_REFUSED"
    http_status = 400


class GitTokenRefused(LocationRefused):
    """A git source names an operator token for a URL the token is not for: not https, or a host
    other than those the operator wrote before the token (KB_GIT_TOKEN_<NAME>=host=token)."""

    code = "INGEST_GIT_TOKEN_REFUSED"
    http_status = 400


class FolderEntryRefused(IngestError):
    """A file of a folder source that is not read: no longer a regular file (a link, a FIFO, a
    device), reached through a directory swapped for a link since the listing, or hard-linked."""

    code = "INGEST_FOLDER_ENTRY_REFUSED"
    http_status = 400


class SyncBudgetExceeded(IngestError):
    """A repository whose clone or fetch outgrew KB_GIT_MAX_BYTES or KB_GIT_TIMEOUT."""

    code = "INGEST_SYNC_BUDGET"
    http_status = 413
