"""One candidate's explained score, steps 2 and 3 of the ranking (`retrieval/ranker.py`): each
channel's statistics over this query's lists, meaning and words fused into the base in cosine
units (`fuse`), the words' weight for this query, the RRF bonus and the boosts. Pure."""

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
    ScoreDetails,
)


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

    Both z-scores come from this query's lists (their first 100 hits), so neither channel wins by
    scale. The cosine is known for every embedded candidate, so one common matched word cannot lift
    a near-zero cosine over strong meaning matches; a candidate outside the lexical list counts as
    BM25
    0. A lexical list without spread is calibrated over the pool (`pooled_when_flat`), its z capped
       at `lexical_cap`, the vector list's best z (a pool's spread grows with sqrt(n - 1), which is
       no evidence); with no spread at all, words drop out. A candidate with no comparable vector
       takes `unknown_cosine`, the pool's lowest cosine (its `vector_z` is None). None when the
       vector channel is off.
    """
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


def vector_top_z(stats: dict[str, tuple[float, float, float]]) -> float | None:
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


def score_candidate(
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
