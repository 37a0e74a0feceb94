"""Audiences inside a namespace: the groups that read the documents limited to them.

A document and its chunks carry the id of the audience that reads them (NULL: everyone who reads the
namespace). The postings trigger files a restricted chunk's words under the audience's own
statistics key (`-audience_id`), so namespace-wide frequencies, counts, packed lists and spelling
vocabulary hold open documents only (docs/identity.md#audiences).
"""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import models

from kb.models.access import Namespace


class Audience(models.Model):
    """One set of groups in one namespace. Made by `kb.audiences`, never by hand; `key` is the
    groups' ids in order ("3,7"), so a set of groups is one audience however often it is used."""

    namespace = models.ForeignKey(Namespace, on_delete=models.CASCADE, related_name="audiences")
    key = models.CharField(max_length=2000, editable=False)
    groups = models.ManyToManyField(Group, related_name="kb_audiences", editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "key"], name="audience_unique_key")
        ]

    def __str__(self) -> str:
        names = ", ".join(sorted(self.groups.values_list("name", flat=True))) or "nobody"
        return f"{self.namespace}: {names}"
