"""The errors of grounded answers (codes prefixed ANSWER_). An answer's errors reach the reader as
an `error` event of the answer (the search's results still show); the status is what a client
would be told if one were answered alone."""

from kb.errors import Forbidden, KBError, NotFound, ValidationFailed


class AnswersOff(KBError):
    """This deployment has no answer model (KB_ANSWER_URL is empty): search works, answers do
    not."""

    code = "ANSWER_OFF"
    http_status = 503


class AnswersOffForNamespace(Forbidden):
    """A curator turned answers off for every namespace asked (the namespace's "answers" switch)."""

    code = "ANSWER_OFF_FOR_NAMESPACE"
    http_status = 403


class ModelUnreachable(KBError):
    """The answer model's server refused the connection or could not be reached in time."""

    code = "ANSWER_MODEL_UNREACHABLE"
    http_status = 503


class ModelTimeout(KBError):
    """The answer model did not send its first token, or its whole answer, within
    KB_ANSWER_TIMEOUT."""

    code = "ANSWER_MODEL_TIMEOUT"
    http_status = 504


class ModelFailed(KBError):
    """The answer model's server answered with an error status (a wrong model name, a key it
    refuses, a crash)."""

    code = "ANSWER_MODEL_FAILED"
    http_status = 502


class ModelMalformed(KBError):
    """The answer model's server sent something that is not the chat-completions protocol."""

    code = "ANSWER_MODEL_MALFORMED"
    http_status = 502


class PromptTooLarge(KBError):
    """The question and the first source do not fit in KB_ANSWER_CONTEXT_TOKENS with room for the
    answer;
    nothing is cut to make them fit."""

    code = "ANSWER_PROMPT_TOO_LARGE"
    http_status = 413


class AnswerFailed(KBError):
    """Something unforeseen broke the answer after its search; the traceback is in the server
    log."""

    code = "ANSWER_FAILED"
    http_status = 500


class AnswersBusy(KBError):
    """This process already has KB_ANSWER_CONCURRENCY answers under way; retry in a few seconds."""

    code = "ANSWER_BUSY"
    http_status = 429


class AnswerNotFound(NotFound):
    """No answer of that id that this caller may see (another tenant's answers exactly like a
    missing one)."""

    code = "ANSWER_NOT_FOUND"
    http_status = 404


class TooManyNamespaces(ValidationFailed):
    """An answer asked over more namespaces than one answer searches."""

    code = "ANSWER_TOO_MANY_NAMESPACES"
    http_status = 422
