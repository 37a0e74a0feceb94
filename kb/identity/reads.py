"""The log of reads of restricted documents: who (an account, a token, or a person token and its
owner) read which document of which namespace, when, and through which surface (the document
page, the API, MCP, an answer). A document is restricted when it has an audience; every read path
that hands a document's text to a caller calls `record_restricted_reads` with what it handed out.
Rows older than KB_ACCESS_LOG_DAYS are deleted as new ones are written, as the sign-in log's are."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import UTC, timedelta

from django.contrib.auth import get_user_model
from django.db.models import Q
from django.utils import timezone

from kb.auth import Principal, client_address
from kb.conf import kb_settings
from kb.identity.signins import spreadsheet_safe
from kb.models import ApiToken, Document, RestrictedRead

Surface = RestrictedRead.Surface

# the one definition of "restricted", in Python and in SQL: a document with an audience
RESTRICTED = Q(audience__isnull=False)


def is_restricted(document: Document) -> bool:
    """Whether only an audience (some groups) reads `document` inside its namespace."""
    return document.audience_id is not None


def record_restricted_reads(
    principal: Principal,
    documents: Iterable[Document | int],
    surface: str,
    request=None,
) -> int:
    """Log the restricted ones among `documents` (instances already read, or ids) as read by
    `principal` through `surface`; return how many rows were written. Open documents cost nothing
    when passed as instances, one query when passed as ids."""
    given = list(documents)
    ids = [item for item in given if isinstance(item, int)]
    restricted = [item for item in given if not isinstance(item, int) and is_restricted(item)]
    if ids:
        restricted += Document.objects.filter(RESTRICTED, pk__in=ids).select_related("namespace")
    if not restricted:
        return 0
    username = (
        get_user_model().objects.filter(pk=principal.user_id).values_list("username", flat=True)
    ).first() or ""
    token = ApiToken.objects.filter(pk=principal.token_id).first() if principal.token_id else None
    address = client_address(request)[:64] if request is not None else ""
    seen: set[int] = set()
    rows = []
    for document in restricted:
        if document.pk in seen:
            continue
        seen.add(document.pk)
        rows.append(
            RestrictedRead(
                surface=surface,
                user_id=principal.user_id,
                username=username[:150],
                token=token,
                token_name=str(token)[:120] if token else "",
                document_number=document.pk,
                title=document.title[:500],
                namespace=document.namespace.slug,
                address=address,
            )
        )
    RestrictedRead.objects.bulk_create(rows)
    prune()
    return len(rows)


def prune() -> int:
    """Delete the rows older than the retention: no scheduled job to forget."""
    cutoff = timezone.now() - timedelta(days=retention_days())
    deleted, _ = RestrictedRead.objects.filter(at__lt=cutoff).delete()
    return deleted


def retention_days() -> int:
    return kb_settings().identity.access_log_days


CSV_COLUMNS = (
    "time (UTC)",
    "surface",
    "user name",
    "account id",
    "token",
    "token id",
    "document id",
    "title",
    "namespace",
    "address",
)


def as_csv(reads) -> str:
    """The rows a security officer reads: one a read, oldest first."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in reads.order_by("at", "pk"):
        writer.writerow(
            [
                row.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
                row.surface,
                spreadsheet_safe(row.username),
                row.user_id or "",
                spreadsheet_safe(row.token_name),
                row.token_id or "",
                row.document_number,
                spreadsheet_safe(row.title),
                spreadsheet_safe(row.namespace),
                row.address,
            ]
        )
    return out.getvalue()
