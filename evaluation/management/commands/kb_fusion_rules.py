"""Label-free rules for the words' weight, tried against judged queries without changing the
product.

    .venv/bin/python manage.py kb_fusion_rules --namespace bench-dbpedia-onnx-int8 \
        --runtime onnx-int8 --beir ../shared/bench/dbpedia
    .venv/bin/python manage.py kb_fusion_rules --namespace bench-site-html \
        --suite evals/python-docs.json
    .venv/bin/python manage.py kb_fusion_rules --namespace bench-dbpedia --pseudo described

Each query's candidates are kept from one search through the service, and each rule re-ranks them
with the product's own `ranker.rank`: the grid rows equal `kb_bench`'s nDCG@10 to the last digit, so
a rule's row is what the product would score with it. `--pseudo` grades the grid on pseudo-queries
written from the namespace's documents (`title`, `sentence` or `described`), for a namespace without
judgements. Results: docs/benchmarks.md ("Label-free rules for the unjudged default").
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import re
import statistics
from pathlib import Path

from django.core.management.base import BaseCommand

QUESTION_MARKS = ("?", "？", "؟")
FUSE = None  # the product's own fusion, kept while a row replaces it


def judged_queries(args, refs: dict[int, str]) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Queries and graded judgements per document ref, from a BEIR folder or an eval suite."""
    from evaluation.metrics import load_beir

    if args.beir:
        corpus = load_beir(args.beir)
        return {q: t for q, t in corpus.queries.items() if q in corpus.qrels}, corpus.qrels
    suite = json.loads(Path(args.suite).read_text(encoding="utf-8"))
    queries, qrels = {}, {}
    for case in suite["cases"]:
        wanted = case["expect"].get("sourceIncludes")
        if wanted:
            wanted = [wanted] if isinstance(wanted, str) else wanted
            queries[case["id"]] = case["question"]
            qrels[case["id"]] = {ref: 1 for ref in refs.values() if any(w in ref for w in wanted)}
    return queries, qrels


def pseudo_queries(
    documents, kind: str, sample: int
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """`sample` documents in an order fixed by their refs' hashes, each with a query written from
    it."""
    queries, qrels = {}, {}
    for pk, ref, title, content in sorted(
        documents, key=lambda d: hashlib.sha1(str(d[1]).encode()).hexdigest()
    ):
        first = re.split(r"(?<=[.!?])\s+", (content or "").strip(), maxsplit=1)[0]
        if kind == "title":
            text = (title or "").strip()
        elif kind == "sentence":
            text = first[:300]
        else:
            titled = {word.lower() for word in re.findall(r"\w+", title or "")}
            text = " ".join(
                word for word in re.findall(r"\w+", first) if word.lower() not in titled
            )[:300]
        if len(text) >= 3:
            queries[str(pk)], qrels[str(pk)] = text, {ref: 1}
        if len(queries) >= sample:
            break
    return queries, qrels


def capture(namespace: str, queries: dict[str, str], embedder) -> dict[str, tuple]:
    """Per query: the ranker's candidates, parameters and keyword arguments, as the service passed
    them."""
    import retrieval.service as service
    from retrieval.ranker import RankerParams

    seen = {}
    rank = service.rank

    def kept(candidates, params, **kwargs):
        seen["last"] = (list(candidates), params, kwargs)
        return rank(candidates, params, **kwargs)

    service.rank = kept
    try:
        inputs = {}
        for qid, text in queries.items():
            service.run_search(
                text,
                namespace,
                limit=300,
                params=RankerParams(lexical_weight=0.5),
                log=False,
                query_vector=embedder.embed_query(text),
            )
            inputs[qid] = seen["last"]
        return inputs
    finally:
        service.rank = rank


def top_z(candidates, channel: str) -> float | None:
    """How far a channel's best hit stands above its first 100, in its own deviations."""
    values = sorted((c.hits[channel].raw for c in candidates if channel in c.hits), reverse=True)[
        :100
    ]
    spread = statistics.pstdev(values) if len(values) > 1 else 0
    return (values[0] - statistics.mean(values)) / spread if spread else None


def content_share(text: str, config: str) -> float:
    """The share of the query's words that are not stopwords in `config`."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest(kb_lex(%s, "
            "%s))), (SELECT coalesce(sum(array_length(positions, 1)), 0) FROM "
            "unnest(to_tsvector('simple', %s)))",
            [config, text, text],
        )
        content, words = cursor.fetchone()
    return content / words if words else 1.0


def word_pieces(embedder):
    """The embedding model's own tokenizer, as a function from a word to its word pieces."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedder.model_path), local_files_only=True).tokenize


def fertility(texts, pieces) -> tuple[float, float]:
    """Word pieces per word, and the share of words split into more than one piece: how far the
    text lies from the vocabulary the model was built with."""
    counts = [len(pieces(word)) for text in texts for word in re.findall(r"\w+", text.lower())]
    return sum(counts) / max(len(counts), 1), sum(n > 1 for n in counts) / max(len(counts), 1)


def unit_embeddings(inputs) -> dict:
    """Every captured candidate's stored embedding, of unit length."""
    import numpy as np

    from kb.models import Chunk

    keys = sorted({int(c.key) for candidates, _, _ in inputs.values() for c in candidates})
    found = {}
    for start in range(0, len(keys), 2000):
        for pk, vector in Chunk.objects.filter(pk__in=keys[start : start + 2000]).values_list(
            "pk", "embedding"
        ):
            vector = np.asarray(vector, dtype=float)
            found[pk] = vector / np.linalg.norm(vector)
    return found


def coherence(candidates, channel: str, embeddings, depth: int = 10) -> float | None:
    """The mean pairwise cosine of a channel's first `depth` hits (He et al. 2008, list coherence
    as a predictor of a query's performance)."""
    import numpy as np

    top = sorted((c for c in candidates if channel in c.hits), key=lambda c: c.hits[channel].rank)[
        :depth
    ]
    matrix = np.array([embeddings[int(c.key)] for c in top if int(c.key) in embeddings])
    if len(matrix) < 2:
        return None
    n = len(matrix)
    return float(((matrix @ matrix.T).sum() - n) / (n * n - n))


def rules(namespace_id: int, chunks: int, pieces, embeddings):
    """name -> function(text, candidates, ranker kwargs) -> the words' weight for that query."""
    from evaluation import search_parts
    from retrieval import query_words
    from retrieval.ranker import LEXICAL, VECTOR

    config = query_words.namespace_configs(namespace_id)[0]

    def coheres(text, candidates, kwargs):
        words, meaning = (
            coherence(candidates, LEXICAL, embeddings),
            coherence(candidates, VECTOR, embeddings),
        )
        return 0.0 if words is not None and meaning and words < 0.8 * meaning else 0.5

    def z_ratio(text, candidates, kwargs):
        words, meaning = top_z(candidates, LEXICAL), top_z(candidates, VECTOR)
        return 0.5 * min(1.0, words / meaning) if words is not None and meaning else 0.5

    def specificity(text, candidates, kwargs):
        terms = len(search_parts.query_lexemes(text, namespace_id)) or 1
        return 0.5 * (kwargs.get("query_idf") or 0) / terms / math.log(chunks)

    found = {
        f"w = {w}": (lambda text, candidates, kwargs, w=w: w) for w in (0.0, 0.25, 0.5, 0.75, 1.0)
    }
    return {
        **found,
        "0.5 x content share": lambda text, c, k: 0.5 * content_share(text, config),
        "content share - 0.5, in [0, 0.5]": lambda text, c, k: max(
            0.0, min(0.5, content_share(text, config) - 0.5)
        ),
        "0.5 x words' / meaning's top z": z_ratio,
        "0.5 x mean IDF / ln N": specificity,
        "0 for a question, else 0.5": lambda text, c, k: (
            0.0 if text.strip().endswith(QUESTION_MARKS) else 0.5
        ),
        "0.5 if a word splits in pieces, else 0": lambda text, c, k: (
            0.5 if any(len(pieces(w)) > 1 for w in re.findall(r"\w+", text.lower())) else 0.0
        ),
        "0.5 if words' top 10 cohere, else 0": coheres,
    }


def corroboration(inputs, depth: int) -> tuple[int, int, float]:
    """Over the namespace's queries: how often only the words' best passage is in meaning's first
    `depth` (b), how often only meaning's best is in the words' first `depth` (c), and the exact
    one-sided sign test's p that meaning is corroborated more often (McNemar on b and c)."""
    from retrieval.ranker import LEXICAL, VECTOR

    def placed(candidates, best_of: str, placed_in: str) -> bool | None:
        best = next(
            (c for c in candidates if best_of in c.hits and c.hits[best_of].rank == 1), None
        )
        return (
            None if best is None else placed_in in best.hits and best.hits[placed_in].rank <= depth
        )

    b = c = 0
    for candidates, _, _ in inputs.values():
        words, meaning = placed(candidates, LEXICAL, VECTOR), placed(candidates, VECTOR, LEXICAL)
        if words is not None and meaning is not None:
            b, c = b + (words and not meaning), c + (meaning and not words)
    p = sum(math.comb(b + c, i) for i in range(c, b + c + 1)) / 2 ** (b + c)
    return b, c, p


def min_max_fuse(candidate, stats, lexical_weight, lexical_cap=None, unknown_cosine=None):
    """Bruch et al. 2023's TM2C2 in place of z-scores: the cosine min-max scaled from its
    theoretical minimum (-1) to the list's best, BM25 from 0 to the list's best, then the convex
    combination, in cosine units."""
    from retrieval.ranker import LEXICAL, VECTOR
    from retrieval.scoring import Fused

    vector = stats.get(VECTOR)
    cosine = candidate.cosine
    if vector is None or cosine is None:
        return None
    meaning = (cosine + 1) / (vector[0] + 1)
    lexical, hit = stats.get(LEXICAL), candidate.hits.get(LEXICAL)
    words = (hit.raw if hit else 0.0) / lexical[0] if lexical and lexical[0] > 0 else None
    fused = meaning if words is None else (1 - lexical_weight) * meaning + lexical_weight * words
    return Fused(None, None, fused * vector[0])


def words_only_add(candidate, stats, lexical_weight, lexical_cap=None, unknown_cosine=None):
    """The z-score fusion with the lexical z floored at 0: words can lift a passage but their
    absence never lowers it (a relevant passage may say it in other words)."""
    from retrieval.ranker import VECTOR
    from retrieval.scoring import Fused

    fused = FUSE(candidate, stats, lexical_weight, lexical_cap, unknown_cosine)
    if fused is None or fused.lexical_z is None:
        return fused
    _, mean, spread = stats[VECTOR]
    lexical_z = max(fused.lexical_z, 0.0)
    return Fused(
        fused.vector_z,
        lexical_z,
        max(
            mean + ((1 - lexical_weight) * fused.vector_z + lexical_weight * lexical_z) * spread,
            1e-6,
        ),
    )


def two_gaussians(values, iterations: int = 60):
    """A two-component Gaussian mixture fitted by EM to one list's scores (Manmatha et al. 2001
    model a list as relevant and non-relevant scores): (share of the high component, its mean and
    spread, the low one's mean and spread), or None when the list cannot be split."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if len(x) < 5 or x.std() == 0:
        return None
    head = max(2, len(x) // 10)
    ordered = np.sort(x)[::-1]
    share, high, low, floor = (
        head / len(x),
        ordered[:head].mean(),
        ordered[head:].mean(),
        x.std() * 0.05,
    )
    high_sd = low_sd = x.std()
    for _ in range(iterations):
        a = share * np.exp(-0.5 * ((x - high) / high_sd) ** 2) / high_sd
        b = (1 - share) * np.exp(-0.5 * ((x - low) / low_sd) ** 2) / low_sd
        r = a / np.maximum(a + b, 1e-300)
        share = min(max(r.mean(), 1e-3), 0.5)
        high, low = (
            (r * x).sum() / max(r.sum(), 1e-9),
            ((1 - r) * x).sum() / max((1 - r).sum(), 1e-9),
        )
        high_sd = max(math.sqrt((r * (x - high) ** 2).sum() / max(r.sum(), 1e-9)), floor)
        low_sd = max(math.sqrt(((1 - r) * (x - low) ** 2).sum() / max((1 - r).sum(), 1e-9)), floor)
    return (share, high, high_sd, low, low_sd) if high > low else None


def relevant_share(model, value: float) -> float | None:
    """The posterior of the high component at `value`."""
    if model is None:
        return None
    share, high, high_sd, low, low_sd = model
    a = share * math.exp(-0.5 * ((value - high) / high_sd) ** 2) / high_sd
    b = (1 - share) * math.exp(-0.5 * ((value - low) / low_sd) ** 2) / low_sd
    return a / (a + b) if a + b > 0 else float(value > high)


MIXTURES = {}  # per query, the two lists' fitted mixtures (set before each ranking)


def mixture_fuse(candidate, stats, lexical_weight, lexical_cap=None, unknown_cosine=None):
    """Fusion of calibrated scores without labels: each channel's score read as the posterior that
    it belongs to its list's high component, the posteriors combined convexly, in cosine units."""
    from retrieval.ranker import LEXICAL, VECTOR
    from retrieval.scoring import Fused

    vector = stats.get(VECTOR)
    if vector is None or candidate.cosine is None:
        return None
    meaning = relevant_share(MIXTURES.get(VECTOR), candidate.cosine) or 0.0
    hit = candidate.hits.get(LEXICAL)
    words = relevant_share(MIXTURES.get(LEXICAL), hit.raw if hit else 0.0)
    fused = meaning if words is None else (1 - lexical_weight) * meaning + lexical_weight * words
    return Fused(None, None, max(vector[1] + 6 * fused * vector[2], 1e-6))


def feedback(
    candidates,
    params,
    kwargs,
    query_vector,
    embeddings,
    weight: float,
    depth: int = 3,
    beta: float = 0.3,
):
    """Rocchio feedback in embedding space (Li et al. 2021): the query vector moved `beta` of the
    way to the centroid of the fused ranking's first `depth` passages, every candidate's cosine
    taken again against it, and the candidates ranked once more."""
    import numpy as np

    from retrieval import ranker

    first = ranker.rank(candidates, dataclasses.replace(params, lexical_weight=0.5), **kwargs)
    top = [embeddings[int(d.key)] for d in first.kept[:depth] if int(d.key) in embeddings]
    query = np.asarray(query_vector, dtype=float)
    query /= np.linalg.norm(query)
    if top:
        centroid = np.mean(top, axis=0)
        query = (1 - beta) * query + beta * centroid / np.linalg.norm(centroid)
        query /= np.linalg.norm(query)
    moved = []
    for candidate in candidates:
        if int(candidate.key) in embeddings and candidate.cosine is not None:
            cosine = float(embeddings[int(candidate.key)] @ query)
            hits = dict(candidate.hits)
            if ranker.VECTOR in hits:
                hits[ranker.VECTOR] = dataclasses.replace(hits[ranker.VECTOR], raw=cosine)
            candidate = dataclasses.replace(candidate, cosine=cosine, hits=hits)
        moved.append(candidate)
    return ranker.rank(moved, dataclasses.replace(params, lexical_weight=weight), **kwargs)


class Command(BaseCommand):
    help = " ".join(__doc__.split("\n\n")[0].split())  # the first paragraph, on one line

    def add_arguments(self, parser):
        parser.add_argument(
            "--namespace", required=True, help="An ingested namespace of the corpus"
        )
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--beir", help="BEIR folder with queries.jsonl and qrels/test.tsv")
        source.add_argument("--suite", help="An eval suite (cases with expect.sourceIncludes)")
        source.add_argument(
            "--pseudo",
            choices=("title", "sentence", "described"),
            help="Pseudo-queries written from the namespace's documents, instead of judged ones",
        )
        parser.add_argument("--sample", type=int, default=150, help="How many pseudo-queries")
        parser.add_argument(
            "--runtime", help="The local model's document runtime the namespace was embedded with"
        )

    def handle(self, **options):
        run(argparse.Namespace(**options))


def run(args: argparse.Namespace) -> None:
    """Every rule's and fusion's nDCG@10 over the namespace's queries, printed a line each."""
    from evaluation.metrics import ndcg_at
    from kb.embedding.embedders import get_embedder, local_embedder
    from kb.models import Chunk, Document, Namespace
    from retrieval import ranker, scoring

    global FUSE
    FUSE = scoring.fuse
    namespace = Namespace.objects.get(slug=args.namespace)
    documents = list(
        Document.objects.filter(namespace=namespace).values_list("id", "ref", "title", "content")
    )
    refs = {pk: ref for pk, ref, _, _ in documents}
    queries, qrels = (
        pseudo_queries(documents, args.pseudo, args.sample)
        if args.pseudo
        else judged_queries(args, refs)
    )
    embedder = local_embedder(args.runtime) if args.runtime else get_embedder()
    inputs = capture(args.namespace, queries, embedder)
    chunks = Chunk.objects.filter(namespace=namespace).count()
    pieces, embeddings = word_pieces(embedder), unit_embeddings(inputs)
    texts = Chunk.objects.filter(namespace=namespace).order_by("id").values_list("text", flat=True)
    sample = texts[:: max(1, chunks // 400)]
    print(
        "{}: word pieces per word {:.3f}, words split {:.3f} (passages); {:.3f}, {:.3f} (queries)".format(  # noqa: E501
            args.namespace, *fertility(sample, pieces), *fertility(queries.values(), pieces)
        )
    )
    kind = f"pseudo-queries ({args.pseudo})" if args.pseudo else "judged queries"
    print(f"{args.namespace}: {len(queries)} {kind}; nDCG@10 per rule")

    def graded(rank) -> float:
        """The mean nDCG@10 of `rank(qid, candidates, params, kwargs)` over the captured queries."""
        scores = []
        for qid, (candidates, params, kwargs) in inputs.items():
            keys = {c.key: c.group for c in candidates}
            kept = rank(qid, candidates, params, kwargs).kept
            scores.append(
                ndcg_at(list(dict.fromkeys(refs.get(int(keys[d.key])) for d in kept)), qrels[qid])
            )
        return sum(scores) / len(scores)

    def weighted(weight):
        return lambda qid, c, p, k: ranker.rank(
            c, dataclasses.replace(p, lexical_weight=weight(queries[qid], c, k)), **k
        )

    for name, weight in rules(namespace.pk, chunks, pieces, embeddings).items():
        print(f"  {name:40} {graded(weighted(weight)):.4f}")
    for depth in (3, 10):
        b, c, p = corroboration(inputs, depth)
        print(
            f"  corroboration in the first {depth}: only the words' best {b}, only meaning's "
            f"best {c}, "
            f"p(meaning more often) = {p:.3f}"
        )

    def mixtures(qid, c, p, k):
        for channel in (ranker.VECTOR, ranker.LEXICAL):
            MIXTURES[channel] = two_gaussians(
                sorted((x.hits[channel].raw for x in c if channel in x.hits), reverse=True)[:100]
            )
        return ranker.rank(c, dataclasses.replace(p, lexical_weight=0.5), **k)

    try:
        scoring.fuse = min_max_fuse
        for w in (0.0, 0.25, 0.5):
            print(
                f"  {f'min-max fusion (TM2C2), w = {w}':40} {graded(weighted(lambda t, c, k, w=w: w)):.4f}"  # noqa: E501
            )
        scoring.fuse = words_only_add
        for w in (0.25, 0.5):
            print(
                f"  {f'lexical z floored at 0, w = {w}':40} {graded(weighted(lambda t, c, k, w=w: w)):.4f}"  # noqa: E501
            )
        scoring.fuse = mixture_fuse
        print(f"  {'two-Gaussian posteriors, w = 0.5':40} {graded(mixtures):.4f}")
    finally:
        scoring.fuse = FUSE
    vectors = {qid: embedder.embed_query(text) for qid, text in queries.items()}
    for w in (0.0, 0.5):
        score = graded(lambda qid, c, p, k, w=w: feedback(c, p, k, vectors[qid], embeddings, w))
        print(f"  {f'embedding feedback (3, 0.3), w = {w}':40} {score:.4f}")
