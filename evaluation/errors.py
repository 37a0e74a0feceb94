"""Evaluation errors: stable codes the API maps to HTTP statuses."""

from kb.errors import KBError


class EvalFileError(KBError):
    """An eval suite file that is not valid JSON or YAML or does not follow the format."""

    code = "EVAL_INVALID_FILE"
    http_status = 422


class EvalUnknownVersion(EvalFileError):
    """An eval file of a format version this build does not read."""

    code = "EVAL_UNKNOWN_VERSION"
    http_status = 422
