from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    """How well search works: eval suites and their runs, the benchmarks, the fusion fit."""

    name = "evaluation"
    verbose_name = "Evaluation"
