"""Grounded answers (answers/): one row per answer asked for, tied to the search it was built on."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from kb.models.search import QueryLog


class AnswerLog(models.Model):
    """What one question was answered with: the gate's decision, the sources the model was given,
    the answer's sentences with their citation verdicts and counts, the time it took, an error's
    stable code, and the reader's vote. Pruned with its search (KB_QUERY_RETENTION_DAYS)."""

    query_log = models.ForeignKey(
        QueryLog,
        on_delete=models.CASCADE,
        related_name="answers",
        help_text="The search of the first namespace asked, whose results seeded the answer.",
    )
    namespaces = ArrayField(models.CharField(max_length=128), default=list, blank=True)
    question = models.TextField()
    answered = models.BooleanField(
        help_text="Whether the gate let the model answer (else: not covered)."
    )
    gate_rule = models.CharField(
        max_length=64, help_text="The rule that decided (docs/answers.md#the-gate)."
    )
    gate_reason = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    text = models.TextField(
        blank=True, help_text="The answer as shown: its sentences that were not dropped."
    )
    sources = models.JSONField(default=list, blank=True)
    sentences = models.JSONField(
        default=list, blank=True, help_text="Each sentence, its citations and verdict."
    )
    sentence_count = models.PositiveIntegerField(default=0)
    supported = models.PositiveIntegerField(default=0)
    unsupported = models.PositiveIntegerField(default=0)
    dropped = models.PositiveIntegerField(default=0)
    reads = models.PositiveIntegerField(
        default=0, help_text="How many times the model called the read tool."
    )
    error_code = models.CharField(max_length=64, blank=True)
    timings = models.JSONField(default=dict, blank=True)
    helpful = models.BooleanField(
        null=True, blank=True, help_text="The reader's vote on the answer."
    )
    asker = models.CharField(
        max_length=80,
        blank=True,
        editable=False,
        help_text="Who asked, the only caller who may vote: token:<id>, user:<id>, or "
        "session:<hash> of an anonymous reader's session; empty: nobody.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.question[:80]
