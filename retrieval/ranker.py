"""The hybrid ranker: candidates from several channels in, one explained ranking out.

Pure: standard library only, dataclasses in and out, no ORM and no I/O, so every rule is tested
with plain cases. For each candidate, in order:

1. eligibility: when the query holds an exact identifier, a candidate found only by the vector
   channel, with no exact confirmation, is not eligible;
2. base, in cosine units: meaning and words fused (`fuse`): the convex combination
   (1 - w) * z_vector + w * z_lexical of the candidate's z-scores in this query's vector and
   lexical lists, placed back on the cosine scale (vector mean + fused z * vector spread). The
   cosine is known for every embedded candidate (one without a comparable vector counts as the
   least similar found), so words alone cannot lift a passage whose meaning is far from the
   query; a channel whose best hit does not stand out from its own list adds little; a list
   without spread adds nothing. The weight w comes from the namespace's fitted
   calibration or the default 0.5 (retrieval/fusion.py), and is 0 when the lexical channel ran
   and found nothing (`channel_notes` names it in the summary). The base is the identifier channel's
   strong fixed value when that is higher; names only add rank evidence. Without a vector list,
   a channel's score is relative to its best;
3. relevance = base + RRF bonus (rrf_weight * sum of 1 / (rrf_k + rank) over channels: with the
   default weight 1, first in two channels adds 2/61 ~ 0.03, a tie-breaker on the cosine scale)
   + recency boost (recency_weight * exp(-age / half_life)) + priority boost (priority_weight *
   the source's priority), both boosts counted in the spread of this query's list (`boost_unit`),
   so they weigh the same under every model's cosine scale;
4. duplicate collapse, stage one: identical normalised text keeps only its best candidate;
5. relative threshold: relevance below top relevance * floor is dropped, unless the candidate is
   a strong multi-channel hit (found by at least `bypass_channels` channels, each within
   `bypass_rank`);
6. duplicate collapse, stage two: the same body under another breadcrumb (mirrored pages);
7. MMR diversity over embeddings (off when mmr_lambda is 1) among the first `mmr_depth`
   candidates, seeded with at most one candidate per kind whose relevance is within
   `seed_ratio` of the pool's top;
8. deterministic order: score, then cosine, then path, then position, then key.

Every candidate, kept or dropped, gets a `ScoreDetails` saying what happened to it and why.
Steps 4, 6 and 7 are computed by `retrieval/diversity.py`; the decisions and their reasons are made
here.
Steps 2 and 3, each candidate's explained score, are computed by `retrieval/scoring.py`.
"""

from __future__ import annotations

from typing import Sequence

from retrieval.candidates import (
    BASES,
    CHANNELS,
    FUSED,
    IDENTIFIERS,
    LEXICAL,
    NAMES,
    NO_SHARED_TERM,
    VECTOR,
    Candidate,
    ChannelHit,
    ChannelNote,
    ChannelScore,
    RankerParams,
    Ranking,
    RankSummary,
    ScoreDetails,
)
from retrieval.diversity import first_of_each, mmr_order, normalise_text
from retrieval.fusion import DEFAULT_LEXICAL_WEIGHT
from retrieval.scoring import (
    boost_unit,
    channel_notes,
    channel_stats,
    pooled_when_flat,
    score_candidate,
    vector_top_z,
    words_weight,
)

# the ranker's vocabulary lives in retrieval/candidates.py; what takes part in a ranking is named
# here too
__all__ = [
    "BASES",
    "CHANNELS",
    "FUSED",
    "IDENTIFIERS",
    "LEXICAL",
    "NAMES",
    "NO_SHARED_TERM",
    "VECTOR",
    "Candidate",
    "ChannelHit",
    "ChannelNote",
    "ChannelScore",
    "Ranking",
    "RankerParams",
    "RankSummary",
    "ScoreDetails",
    "rank",
]


def rank(
    candidates: Sequence[Candidate],
    params: RankerParams = RankerParams(),
    *,
    identifier_query: bool = False,
    query_idf: float | None = None,
    notes: tuple[ChannelNote, ...] = (),
) -> Ranking:
    """`query_idf`: the sum of the query terms' IDF weights (what a passage holding every term
    once, at average length, scores in BM25); with it, words weigh in proportion to how much of
    the query the best lexical hit covers (`words_weight`). `notes`: channels the search left
    out before ranking, and why (the summary shows them first)."""
    params.validate()
    by_key = {c.key: c for c in candidates}
    own = channel_stats(candidates)
    stats = pooled_when_flat(own, candidates)
    cap = vector_top_z(stats) if stats is not own else None
    notes = (*notes, *channel_notes(stats, query_idf))
    if NO_SHARED_TERM in notes:
        weight = 0.0
    elif VECTOR not in stats and LEXICAL in stats:
        weight = 1.0  # no meaning to fuse with: words alone, whatever the namespace's weight
    else:
        weight = words_weight(
            DEFAULT_LEXICAL_WEIGHT if params.lexical_weight is None else params.lexical_weight,
            stats,
            query_idf,
        )
    unit = boost_unit(stats)
    # a passage whose vector the query's cannot be compared with counts as the least similar one
    # found
    unknown = min((c.cosine for c in candidates if c.cosine is not None), default=None)
    scored = [score_candidate(c, params, stats, weight, cap, unit, unknown) for c in candidates]

    dropped: list[ScoreDetails] = []
    pool = []
    for details in scored:
        if identifier_query and not _confirmed(by_key[details.key]):
            dropped.append(
                _updated(
                    details,
                    eligible=False,
                    dropped_by="eligibility",
                    reason="the query names an exact identifier; found by meaning alone",
                )
            )
        else:
            pool.append(details)

    pool = _order(pool, by_key)
    pool, duplicates = _collapse(
        pool, by_key, lambda c: c.text_key or normalise_text(c.text), "same text as"
    )
    # stage two compares bodies; only candidates that passed stage one are normalised
    dropped += duplicates

    top = pool[0].relevance if pool else 0.0
    floor = top * params.floor
    passed = []
    for details in pool:
        if details.relevance >= floor:
            passed.append(details)
        elif _strong_multichannel(details, params):
            passed.append(_updated(details, bypassed_threshold=True))
        else:
            dropped.append(
                _updated(
                    details,
                    dropped_by="threshold",
                    reason=f"relevance {details.relevance:.3f} < floor {floor:.3f}",
                )
            )

    passed, duplicates = _collapse(
        passed, by_key, lambda c: c.body_key or normalise_text(c.body or c.text), "same body as"
    )
    dropped += duplicates

    ordered = (
        _mmr(passed, by_key, params) if params.mmr_lambda < 1 else passed
    )  # score == relevance
    kept = [_updated(d, kept=True, rank=i) for i, d in enumerate(ordered[: params.limit], start=1)]
    beyond = [
        _updated(d, dropped_by="limit", reason=f"beyond the first {params.limit}")
        for d in ordered[params.limit :]
    ]
    dropped += beyond

    per_channel = {name: sum(1 for c in candidates if name in c.hits) for name in CHANNELS}
    summary = RankSummary(
        candidates=len(candidates),
        per_channel=per_channel,
        kept=len(kept),
        dropped_eligibility=sum(1 for d in dropped if d.dropped_by == "eligibility"),
        dropped_duplicate=sum(1 for d in dropped if d.dropped_by == "duplicate"),
        dropped_threshold=sum(1 for d in dropped if d.dropped_by == "threshold"),
        beyond_limit=len(beyond),
        top_relevance=top,
        floor=floor,
        calibration=stats,
        lexical_weight=weight,
        channel_notes=notes,
    )
    return Ranking(kept=kept, dropped=dropped, summary=summary)


def _updated(details: ScoreDetails, **changes) -> ScoreDetails:
    """A copy of `details` with some fields changed: `dataclasses.replace` without re-running
    __init__, which made up a tenth of a search's ranking time with ~170 candidates."""
    clone = object.__new__(ScoreDetails)
    clone.__dict__.update(details.__dict__)
    clone.__dict__.update(changes)
    return clone


def _confirmed(candidate: Candidate) -> bool:
    return any(name in candidate.hits for name in (LEXICAL, NAMES, IDENTIFIERS))


def _strong_multichannel(details: ScoreDetails, params: RankerParams) -> bool:
    strong = [s for s in details.channels.values() if s.rank <= params.bypass_rank]
    return len(strong) >= params.bypass_channels


def _sort_key(details: ScoreDetails, candidate: Candidate, score: float):
    cosine = details.cosine if details.cosine is not None else -2.0
    return (-round(score, 12), -cosine, candidate.path, candidate.position, str(candidate.key))


def _order(pool: list[ScoreDetails], by_key: dict) -> list[ScoreDetails]:
    return sorted(pool, key=lambda d: _sort_key(d, by_key[d.key], d.relevance))


def _collapse(pool: list[ScoreDetails], by_key: dict, keyfunc, label: str):
    """Keep the first (best-ordered) of each group of equal keys; the rest are duplicates."""
    kept, duplicates = first_of_each(pool, lambda details: keyfunc(by_key[details.key]))
    return kept, [
        _updated(details, dropped_by="duplicate", duplicate_of=first, reason=f"{label} {first}")
        for details, first in duplicates
    ]


def _mmr(pool: list[ScoreDetails], by_key: dict, params: RankerParams) -> list[ScoreDetails]:
    embeddings = {d.key: by_key[d.key].embedding for d in pool[: params.mmr_depth]}
    ordered = mmr_order(
        pool,
        embeddings,
        lam=params.mmr_lambda,
        depth=params.mmr_depth,
        seed_ratio=params.seed_ratio,
    )
    return [
        _updated(details, score=score, mmr_penalty=penalty) for details, score, penalty in ordered
    ]
