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


class BenchmarkIngestFailed(KBError):
    """A benchmark's corpus did not ingest (its run failed part-way): its figures would measure
    part of the corpus, so nothing is measured."""

    code = "EVAL_BENCHMARK_INGEST_FAILED"
    http_status = 500
