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
Steps 4, 6 and 7 are computed by `retrieval/diversity.py`; the decisions and their reasons are made here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from retrieval.candidates import (
    BASES,
    CALIBRATION_DEPTH,
    CHANNELS,
    FULL_WEIGHT_IDF_SHARE,
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

# the ranker's vocabulary lives in retrieval/candidates.py; what takes part in a ranking is named here too
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
    cap = _vector_top_z(stats) if stats is not own else None
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
    # a passage whose vector the query's cannot be compared with counts as the least similar one found
    unknown = min((c.cosine for c in candidates if c.cosine is not None), default=None)
    scored = [_score(c, params, stats, weight, cap, unit, unknown) for c in candidates]

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


def channel_notes(
    stats: dict[str, tuple[float, float, float]], query_idf: float | None
) -> tuple[ChannelNote, ...]:
    """The channels that ran and could not help: the lexical channel, when it ran (`query_idf`
    is given) and no query term occurs in the namespace while meaning found passages. The fused
    base then rests on the vector z-score alone (`fuse`), and the summary says so."""
    if query_idf is not None and query_idf <= 0 and LEXICAL not in stats and VECTOR in stats:
        return (NO_SHARED_TERM,)
    return ()


def channel_stats(candidates: Sequence[Candidate]) -> dict[str, tuple[float, float, float]]:
    """Per channel: best raw score, and mean and standard deviation of its first 100 hits."""
    values: dict[str, list[float]] = {}
    tops: dict[str, float] = {}
    for candidate in candidates:
        for name, hit in candidate.hits.items():
            tops[name] = max(tops.get(name, -math.inf), hit.raw)
            if hit.rank <= CALIBRATION_DEPTH:
                values.setdefault(name, []).append(hit.raw)
    stats = {}
    for name, top in tops.items():
        sample = values.get(name, [top])
        mean = sum(sample) / len(sample)
        std = math.sqrt(sum((v - mean) ** 2 for v in sample) / len(sample))
        stats[name] = (top, mean, std)
    return stats


def pooled_when_flat(
    stats: dict[str, tuple[float, float, float]], candidates: Sequence[Candidate]
) -> dict[str, tuple[float, float, float]]:
    """A lexical list without spread (one hit, or all hits equal) is calibrated over the whole
    candidate pool instead, where every candidate outside it scores BM25 0: a word found in one
    passage stands out (up to the cap in `fuse`), a word found equally in a third of them says
    little (1.4 deviations)."""
    lexical = stats.get(LEXICAL)
    if lexical is None or lexical[2] > 0 or VECTOR not in stats:
        return stats
    values = [c.hits[LEXICAL].raw if LEXICAL in c.hits else 0.0 for c in candidates]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {**stats, LEXICAL: (lexical[0], mean, std)}


def channel_score(
    name: str, hit: ChannelHit, stats: dict[str, tuple[float, float, float]], params: RankerParams
) -> float:
    """A channel's own signal mapped into (0, 1], shown per channel in the explanation: cosine for
    vector, the fixed strong value for identifiers, relative to the channel's best otherwise."""
    if name == VECTOR:
        return min(1.0, max(hit.raw, 1e-6))
    if name == IDENTIFIERS:
        return params.identifier_base
    top = stats[name][0]
    if top <= 0:
        return 1.0 / hit.rank  # no usable raw signal: fall back to the rank
    return max(hit.raw / top, 1e-6)


@dataclass(frozen=True)
class Fused:
    """The meaning-and-words score of one candidate: each channel's z-score, the weights, and
    the result in cosine units (the vector channel's mean plus the fused z times its spread)."""

    vector_z: float | None
    lexical_z: float | None
    score: float


def fuse(
    candidate: Candidate,
    stats: dict[str, tuple[float, float, float]],
    lexical_weight: float,
    lexical_cap: float | None = None,
    unknown_cosine: float | None = None,
) -> Fused | None:
    """Convex combination of the vector and lexical z-scores, in cosine units.

    Both z-scores are read from this query's lists (their first 100 hits), so neither channel wins
    by scale and a channel whose best hit does not stand out from its own list adds little. The
    cosine is known for every embedded candidate, so a lexical hit with a near-zero cosine has a strongly
    negative vector z: one common matched word cannot lift it over strong meaning matches. A
    candidate outside the lexical list matched fewer query terms, scored as BM25 0. A lexical list
    without spread is calibrated over the candidate pool (`pooled_when_flat`), and its z-score is
    capped at `lexical_cap`, the vector list's best z: a hit's standing in a pool grows with the
    pool's size (sqrt(n - 1)), which is not evidence. When even the pool has no spread, words drop
    out of the combination. A candidate with no vector the query's can be compared with (not
    embedded yet, or by another model) takes `unknown_cosine`, the lowest cosine among the
    candidates: its words place it among the passages least like the query, on the same scale as
    the others, never above a passage of the same words whose meaning is known (its `vector_z`
    is None).
    None when there is no vector signal (the vector channel is off)."""
    vector = stats.get(VECTOR)
    if vector is None:
        return None
    cosine = (
        candidate.cosine
        if candidate.cosine is not None
        else getattr(candidate.hits.get(VECTOR), "raw", None)
    )
    known = cosine is not None
    _, vector_mean, vector_std = vector
    if not known:
        cosine = vector_mean if unknown_cosine is None else unknown_cosine
    if vector_std <= 0:  # a flat vector list: no unit to place words in; ranks decide (RRF bonus)
        return Fused(0.0 if known else None, None, max(cosine, 1e-6))
    vector_z = (cosine - vector_mean) / vector_std
    lexical = stats.get(LEXICAL)
    lexical_z = None
    if lexical is not None and lexical[2] > 0:
        hit = candidate.hits.get(LEXICAL)
        lexical_z = ((hit.raw if hit else 0.0) - lexical[1]) / lexical[2]
        if lexical_cap is not None:
            lexical_z = min(lexical_z, lexical_cap)
    fused_z = (
        vector_z
        if lexical_z is None
        else (1 - lexical_weight) * vector_z + lexical_weight * lexical_z
    )
    return Fused(
        vector_z if known else None, lexical_z, max(vector_mean + fused_z * vector_std, 1e-6)
    )


def _updated(details: ScoreDetails, **changes) -> ScoreDetails:
    """A copy of `details` with some fields changed: `dataclasses.replace` without re-running
    __init__, which made up a tenth of a search's ranking time with ~170 candidates."""
    clone = object.__new__(ScoreDetails)
    clone.__dict__.update(details.__dict__)
    clone.__dict__.update(changes)
    return clone


def words_weight(
    lexical_weight: float, stats: dict[str, tuple[float, float, float]], query_idf: float | None
) -> float:
    """The lexical weight for this query: the namespace's weight, scaled down in proportion when
    the best lexical hit reaches less than `FULL_WEIGHT_IDF_SHARE` of the query's IDF mass. When
    no passage holds the query's rare words, the lexical list is a list of common-word matches:
    exceptional within itself, yet it says little, and it weighs that little."""
    if not query_idf or LEXICAL not in stats:
        return lexical_weight
    share = max(stats[LEXICAL][0], 0.0) / query_idf
    return lexical_weight * min(1.0, share / FULL_WEIGHT_IDF_SHARE)


def _vector_top_z(stats: dict[str, tuple[float, float, float]]) -> float | None:
    top, mean, std = stats[VECTOR]
    return (top - mean) / std if std > 0 else None


_BASE_PREFERENCE = {
    name: -index for index, name in enumerate(BASES)
}  # on equal scores, the earlier base
_NOT_BASES_WHEN_FUSED = (
    VECTOR,
    LEXICAL,
    NAMES,
)  # fused into the base (names only add rank evidence)


def boost_unit(stats: dict[str, tuple[float, float, float]]) -> float:
    """What a priority or recency boost of 1 adds: the spread of the list the ranking is read
    from, so a source's priority moves its passages past the same near-equals under any model's
    cosine scale. The vector list's standard deviation; when it has none (meaning off, or a flat
    list), the words' standard deviation relative to their best, as their scores are read then;
    0 when no list has spread, and boosts add nothing."""
    vector = stats.get(VECTOR)
    if vector is not None and vector[2] > 0:
        return vector[2]
    words = stats.get(LEXICAL)
    if words is not None and words[0] > 0:
        return words[2] / words[0]
    return 0.0


def _score(
    candidate: Candidate,
    params: RankerParams,
    stats,
    lexical_weight: float,
    lexical_cap: float | None,
    unit: float,
    unknown_cosine: float | None = None,
) -> ScoreDetails:
    """One candidate's explained score. Runs once per candidate (about 170 a search), so it
    walks the channels once, in CHANNELS order, for their scores, the base and the RRF sum."""
    fused = fuse(candidate, stats, lexical_weight, lexical_cap, unknown_cosine)
    hits = candidate.hits
    channels = {}
    base_channel, base, preference = "", 0.0, None
    inverse_ranks = 0  # summed in CHANNELS order, as sum() would
    for name in CHANNELS:
        hit = hits.get(name)
        if hit is None:
            continue
        score = channel_score(name, hit, stats, params)
        channels[name] = ChannelScore(hit.rank, hit.raw, score)
        inverse_ranks += 1.0 / (params.rrf_k + hit.rank)
        if fused is None or name not in _NOT_BASES_WHEN_FUSED:
            base_channel, base, preference = _better(base_channel, base, preference, name, score)
    if fused is not None:
        base_channel, base, preference = _better(base_channel, base, preference, FUSED, fused.score)
    rrf = params.rrf_weight * inverse_ranks
    recency = priority = 0.0
    if unit > 0 and params.recency_weight > 0 and candidate.age_days is not None:
        recency = (
            params.recency_weight
            * unit
            * math.exp(-max(candidate.age_days, 0.0) / params.recency_half_life_days)
        )
    if unit > 0 and candidate.priority:
        priority = params.priority_weight * unit * candidate.priority
    relevance = base + rrf + recency + priority
    return ScoreDetails(
        key=candidate.key,
        kind=candidate.kind,
        channels=channels,
        base=base,
        base_channel=base_channel,
        vector_z=fused.vector_z if fused else None,
        lexical_z=fused.lexical_z if fused else None,
        rrf_bonus=rrf,
        recency_boost=recency,
        priority_boost=priority,
        relevance=relevance,
        score=relevance,
        cosine=candidate.cosine,
    )


def _better(name: str, score: float, preference: int | None, other: str, other_score: float):
    """The higher of two bases; on equal scores the one earlier in BASES."""
    other_preference = _BASE_PREFERENCE[other]
    if preference is None or (other_score, other_preference) > (score, preference):
        return other, other_score, other_preference
    return name, score, preference


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
