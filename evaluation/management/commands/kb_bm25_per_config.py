"""BM25 alone over a namespace of several languages, two ways, without changing the product.

    .venv/bin/python manage.py kb_bm25_per_config --namespace bench-mix-en-de \
        --beir ../handbook/mix-en-de

The product's way uses the namespace's statistics over all its passages; the other treats each text
search configuration as its own collection. The first equals `kb_bench`'s lexical row, which checks
the computation. Results: docs/languages.md ("Statistics").
"""

from __future__ import annotations

import collections
import math

from django.core.management.base import BaseCommand
from django.db import connection

from evaluation.metrics import load_beir, ndcg_at
from kb.models import Namespace
from retrieval import bm25, query_words


def idf(count: float, frequency: int) -> float:
    return math.log(1 + (count - frequency + 0.5) / (frequency + 0.5))


class Command(BaseCommand):
    help = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph, on one line

    def add_arguments(self, parser):
        parser.add_argument(
            "--namespace", required=True, help="An ingested namespace of the corpus"
        )
        parser.add_argument(
            "--beir", required=True, help="BEIR folder with queries.jsonl and qrels/test.tsv"
        )

    def handle(self, *, namespace: str, beir: str, **_):
        for line in graded_lines(namespace, beir):
            self.stdout.write(line)


def graded_lines(slug: str, beir: str):
    """The passages per configuration, then one line per way, language and mean nDCG@10."""
    namespace = Namespace.objects.get(slug=slug)
    corpus = load_beir(beir)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.id, c.search_config, d.ref FROM kb_chunk c JOIN kb_document d ON d.id = "
            "c.document_id WHERE c.namespace_id = %s",
            [namespace.pk],
        )
        chunks = {pk: (config, ref) for pk, config, ref in cursor.fetchall()}
        cursor.execute(
            "SELECT lexeme, chunk_id, tf, doc_len FROM kb_chunk_term WHERE namespace_id = %s",
            [namespace.pk],
        )
        postings, lengths = collections.defaultdict(list), {}
        for lexeme, chunk, tf, length in cursor.fetchall():
            postings[lexeme].append((chunk, tf))
            lengths[chunk] = length
    per_config = collections.Counter(chunks[chunk][0] for chunk in lengths)
    average = sum(lengths.values()) / len(lengths)
    config_average = {
        config: sum(n for chunk, n in lengths.items() if chunks[chunk][0] == config) / count
        for config, count in per_config.items()
    }
    yield f"{slug}: passages per configuration {dict(per_config)}"

    graded = collections.defaultdict(list)
    for qid, text in corpus.queries.items():
        if qid not in corpus.qrels:
            continue
        terms = query_words.query_lexemes(text, query_words.namespace_configs(namespace.pk, text))
        for way in ("namespace", "per configuration"):
            scores = collections.defaultdict(float)
            for lexeme, query_tf in terms:
                found = postings.get(lexeme, [])
                frequencies = collections.Counter(chunks[chunk][0] for chunk, _ in found)
                for chunk, tf in found:
                    config = chunks[chunk][0]
                    if way == "namespace":
                        weight, length = query_tf * idf(len(lengths), len(found)), average
                    else:
                        weight, length = (
                            query_tf * idf(per_config[config], frequencies[config]),
                            config_average[config],
                        )
                    scores[chunk] += weight * bm25.impact(tf, lengths[chunk], length)
            ranked = sorted(scores, key=lambda chunk: -scores[chunk])[:100]
            documents = list(dict.fromkeys(chunks[chunk][1] for chunk in ranked))
            graded[way, qid.split(":")[0]].append(ndcg_at(documents, corpus.qrels[qid]))
            graded[way, "all"].append(graded[way, qid.split(":")[0]][-1])
    for (way, language), scores in sorted(graded.items()):
        mean = sum(scores) / len(scores)
        yield f"  BM25 nDCG@10, statistics {way:18} {language:4} {mean:.4f} ({len(scores)} queries)"
