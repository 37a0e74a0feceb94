"""What searching produced and is judged by: the query log, eval suites and runs, fusion
calibrations."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from kb.models.access import Namespace


class QueryLog(models.Model):
    class Caller(models.TextChoices):
        """Which surface asked: curators tell people (page), apps (API) and agents (MCP) apart."""

        PAGE = "page", "Search page"
        API = "api", "JSON API"
        MCP = "mcp", "MCP (agents)"
        INTERNAL = "internal", "Internal (benchmark, tools)"

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="queries")
    query = models.TextField()
    result_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    caller = models.CharField(
        max_length=16,
        choices=Caller.choices,
        blank=True,
        help_text="The surface that asked; blank for queries logged before it was recorded.",
    )
    top_cosine = models.FloatField(
        null=True,
        blank=True,
        help_text="The best result's cosine: a low one is a weak answer (curator report).",
    )
    strong = models.BooleanField(
        null=True,
        blank=True,
        help_text="Whether a result was a strong match, the cited tier (curator report: weak when "
        "not); blank for searches logged before it was recorded.",
    )
    meaning_excess = models.FloatField(
        null=True,
        blank=True,
        help_text="How far the best passage's cosine stood beyond chance among the namespace's "
        "passages, in standard deviations (retrieval.breadth.meaning_excess); its median over the "
        "namespace's latest searches is shown in its console; blank when meaning was not used, the "
        "search was filtered, or the namespace's sample was still being read.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["namespace", "-created_at"], name="query_ns_recent")]

    def __str__(self) -> str:
        return self.query[:80]


class MeaningEstimate(models.Model):
    """A namespace's latest searches' median excess over chance (QueryLog.meaning_excess), kept
    by the query log's writer (retrieval/querylog.py) for the namespace's console. It does not set
    the weights (docs/searching.md#the-search-log-does-not-set-the-weights)."""

    namespace = models.OneToOneField(
        Namespace, on_delete=models.CASCADE, primary_key=True, related_name="meaning_estimate"
    )
    median_excess = models.FloatField(null=True, blank=True)
    searches = models.PositiveIntegerField(
        default=0, help_text="How many of the latest searches had an excess."
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.namespace_id}: {self.median_excess} over {self.searches} searches"


class QueryFeedback(models.Model):
    """A reader's thumbs up or down on one result of one logged search. No user is stored:
    only the query log row, the result and the vote; pruned with the query log
    (KB_QUERY_RETENTION_DAYS)."""

    query_log = models.ForeignKey(QueryLog, on_delete=models.CASCADE, related_name="feedback")
    chunk_id = models.BigIntegerField()
    document_id = models.BigIntegerField()
    helpful = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["query_log", "chunk_id"], name="feedback_one_vote")
        ]

    def __str__(self) -> str:
        return f"{'+' if self.helpful else '-'} {self.chunk_id} for {self.query_log_id}"


class EvalSuite(models.Model):
    """A retrieval regression suite (the JSON format of evaluation/suites.py), run on demand."""

    name = models.CharField(max_length=200, help_text="Unique within its namespace.")
    namespace = models.ForeignKey(
        Namespace,
        on_delete=models.CASCADE,
        related_name="eval_suites",
        null=True,
        help_text="Every case searches this namespace (the file's own namespaces are overridden). "
        "A suite without one, from before suites had an owner, is a superuser's.",
    )
    definition = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        # per namespace: a name taken in another tenant's namespace says nothing here
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "name"], name="evalsuite_name_per_namespace"
            ),
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(namespace__isnull=True),
                name="evalsuite_name_without_namespace",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class EvalRun(models.Model):
    suite = models.ForeignKey(EvalSuite, on_delete=models.CASCADE, related_name="runs")
    namespace = models.ForeignKey(
        Namespace, on_delete=models.CASCADE, related_name="eval_runs", null=True
    )
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0)
    results = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.suite} run {self.pk}: {self.passed}/{self.total}"

    def regressions(self) -> list[str]:
        """Cases that passed in the suite's previous run and fail in this one."""
        previous = (
            EvalRun.objects.filter(suite_id=self.suite_id, pk__lt=self.pk).order_by("-pk").first()
        )
        if previous is None:
            return []
        passed_before = {c["id"] for c in previous.results.get("cases", []) if c["passed"]}
        return [
            c["id"]
            for c in self.results.get("cases", [])
            if not c["passed"] and c["id"] in passed_before
        ]


class FusionCalibration(models.Model):
    """The lexical weight fitted for one namespace to judged queries (retrieval/fusion.py); a
    namespace without one searches with the default weights. Each refit bumps the version."""

    namespace = models.OneToOneField(Namespace, on_delete=models.CASCADE, related_name="fusion")
    lexical_weight = models.FloatField()
    fitted_on = models.CharField(
        max_length=200, help_text="What judged the fit: a benchmark or eval suite"
    )
    queries = models.PositiveIntegerField()
    cross_validated_ndcg = models.FloatField()
    default_ndcg = models.FloatField()
    version = models.PositiveIntegerField(default=1)
    fitted_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.namespace}: lexical weight {self.lexical_weight} (v{self.version})"
