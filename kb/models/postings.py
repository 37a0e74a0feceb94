"""The lexical channel's tables: each chunk's BM25 postings and the per-namespace counts BM25
needs, kept by a trigger on kb_chunk, and the packed posting lists built from them."""

from django.db import models

from kb.models.access import Namespace
from kb.models.content import Chunk


class ChunkTerm(models.Model):
    """One BM25 posting: a lexeme of a chunk with its term frequency and the chunk's length.
    Written only by the database trigger on kb_chunk (migration 0003), never by Python."""

    pk = models.CompositePrimaryKey("namespace", "lexeme", "chunk")
    namespace = models.ForeignKey(
        Namespace, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    lexeme = models.TextField()
    chunk = models.ForeignKey(
        Chunk, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    tf = models.FloatField()
    doc_len = models.FloatField()

    class Meta:
        db_table = "kb_chunk_term"
        managed = True


class NamespaceStats(models.Model):
    """Chunk count and total length per namespace, for BM25; maintained by the same trigger,
    which also stamps each change with a fresh `generation` (the key of the search's cache of
    document frequencies)."""

    namespace = models.OneToOneField(
        Namespace,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    chunk_count = models.BigIntegerField(default=0)
    total_len = models.FloatField(default=0)
    generation = models.BigIntegerField(default=0, editable=False)

    class Meta:
        db_table = "kb_namespace_stats"
        verbose_name_plural = "namespace stats"


class PostingListBuild(models.Model):
    """A namespace's packed posting lists as last built (retrieval/posting_lists.py, migration
    0020)."""

    namespace = models.OneToOneField(
        Namespace,
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    base_chunk_id = models.BigIntegerField()  # packed chunk ids are offsets from it
    max_chunk_id = models.BigIntegerField()  # chunks above it are newer than the lists
    chunk_count = models.BigIntegerField()
    postings = models.BigIntegerField()
    built_at = models.DateTimeField()
    build_seconds = models.FloatField(default=0)
    lengths = (
        models.BinaryField()
    )  # every chunk's length at its offset from the base (migration 0031)

    class Meta:
        db_table = "kb_posting_list_build"


class PostingList(models.Model):
    """One term's postings in a namespace, packed; written only by retrieval/posting_lists.build."""

    pk = models.CompositePrimaryKey("namespace", "lexeme")
    namespace = models.ForeignKey(
        Namespace, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    lexeme = models.TextField()
    postings = models.IntegerField()
    chunk_offsets = models.BinaryField()
    tfs = models.BinaryField()
    min_length = models.FloatField()  # the shortest of its chunks: the term's bound in scoring

    class Meta:
        db_table = "kb_posting_list"


class PostingListChange(models.Model):
    """A chunk written or deleted since its namespace's lists were built; recorded by the
    trigger."""

    pk = models.CompositePrimaryKey("namespace", "chunk_id")
    namespace = models.ForeignKey(
        Namespace, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    chunk_id = models.BigIntegerField()

    class Meta:
        db_table = "kb_posting_list_changed"
