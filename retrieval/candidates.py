"""The ranker's vocabulary: the channels, what each found (candidates), the ranker's parameters,
and the explained ranking it returns. Pure: standard library only."""

from __future__ import annotations

from dataclasses import dataclass, field

from kb.embedding.compared import Foreign
from retrieval.agreement import Reading
from retrieval.errors import InvalidRankerParams

VECTOR, LEXICAL, NAMES, IDENTIFIERS = "vector", "lexical", "names", "identifiers"
CHANNELS = (VECTOR, LEXICAL, NAMES, IDENTIFIERS)
FUSED = "fused"  # the base from meaning and words together (see `fuse`)
BASES = (FUSED, *CHANNELS)
CALIBRATION_DEPTH = 100  # a channel's distribution is read from its first 100 hits
# a best lexical hit reaching a quarter of the query's IDF mass keeps the full weight
# (chosen leaving one collection out: docs/benchmarks.md#the-default-without-judged-queries)
FULL_WEIGHT_IDF_SHARE = 0.25


@dataclass(frozen=True)
class ChannelHit:
    rank: int  # 1-based rank in that channel's list
    raw: float  # the channel's own signal: cosine, BM25 score, name coverage, 1.0 for exact


@dataclass(frozen=True)
class Candidate:
    key: int | str
    kind: str = "chunk"  # chunk | summary | capability
    group: str = ""  # the document it belongs to
    path: str = ""
    position: int = 0
    text: str = ""
    body: str = ""  # the text without its breadcrumb (stage-two duplicates)
    embedding: tuple[float, ...] | None = None
    cosine: float | None = None  # to the query, when known (tie-break, cited tier)
    hits: dict[str, ChannelHit] = field(default_factory=dict)
    age_days: float | None = None
    priority: float = 0.0
    text_key: str | None = None  # precomputed duplicate keys (e.g. by the database); derived
    body_key: str | None = None  # from text and body when absent


@dataclass(frozen=True)
class RankerParams:
    limit: int = 10
    rrf_k: int = 60
    rrf_weight: float = 1.0
    # boosts count in the spread of the query's list (`scoring.boost_unit`), under any model
    recency_weight: float = 0.0
    recency_half_life_days: float = 365.0
    priority_weight: float = 0.75
    floor: float = 0.3
    bypass_channels: int = 2
    bypass_rank: int = 20
    mmr_lambda: float = 1.0
    mmr_depth: int = 30  # MMR re-orders this many top candidates; the rest follow by relevance
    seed_ratio: float = 0.8
    identifier_base: float = 0.95
    # words against meaning in the fused base, 0 = meaning alone, 1 = words alone; None: the
    # namespace's (its fitted calibration, or retrieval.fusion's default)
    lexical_weight: float | None = None

    def validate(self) -> None:
        problems = []
        if self.limit <= 0:
            problems.append(f"limit must be positive, got {self.limit}")
        if self.rrf_k <= 0:
            problems.append(f"rrf_k must be positive, got {self.rrf_k}")
        for name in (
            "rrf_weight",
            "recency_weight",
            "priority_weight",
            "floor",
            "recency_half_life_days",
        ):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative, got {getattr(self, name)}")
        if self.recency_half_life_days == 0 and self.recency_weight > 0:
            problems.append("recency_half_life_days must be positive when recency_weight is set")
        if not 0 <= self.mmr_lambda <= 1:
            problems.append(f"mmr_lambda must be within [0, 1], got {self.mmr_lambda}")
        if self.lexical_weight is not None and not 0 <= self.lexical_weight <= 1:
            problems.append(f"lexical_weight must be within [0, 1], got {self.lexical_weight}")
        if not 0 <= self.seed_ratio <= 1:
            problems.append(f"seed_ratio must be within [0, 1], got {self.seed_ratio}")
        if self.floor > 1:
            problems.append(
                f"floor is a fraction of the top relevance, at most 1, got {self.floor}"
            )
        if self.mmr_depth < 1:
            problems.append(f"mmr_depth must be at least 1, got {self.mmr_depth}")
        if self.bypass_channels < 1 or self.bypass_rank < 1:
            problems.append("bypass_channels and bypass_rank must be at least 1")
        if problems:
            raise InvalidRankerParams(
                "Invalid ranker parameters: " + "; ".join(problems) + ".",
                details={"problems": problems},
            )


@dataclass(frozen=True)
class ChannelScore:
    rank: int
    raw: float
    score: float  # the channel's score in (0, 1], as used for the base


@dataclass(frozen=True)
class ScoreDetails:
    key: int | str
    kind: str
    channels: dict[str, ChannelScore]
    base: float = 0.0
    base_channel: str = ""  # fused, or the name/identifier channel whose score was higher
    vector_z: float | None = None  # the fused base's inputs (see `fuse`)
    lexical_z: float | None = None
    rrf_bonus: float = 0.0
    recency_boost: float = 0.0
    priority_boost: float = 0.0
    relevance: float = 0.0
    mmr_penalty: float = 0.0
    score: float = 0.0
    cosine: float | None = None
    eligible: bool = True
    bypassed_threshold: bool = False
    kept: bool = False
    dropped_by: str = ""  # eligibility | duplicate | threshold | limit
    reason: str = ""
    duplicate_of: int | str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class RankSummary:
    candidates: int
    per_channel: dict[str, int]
    kept: int
    dropped_eligibility: int
    dropped_duplicate: int
    dropped_threshold: int
    beyond_limit: int
    top_relevance: float
    floor: float  # the absolute relevance floor used
    calibration: dict[str, tuple[float, float, float]] = field(
        default_factory=dict
    )  # top, mean, std
    lexical_weight: float = 0.0  # the weight words had in this query's fused base (`words_weight`)
    channel_notes: tuple[
        "ChannelNote", ...
    ] = ()  # channels that could not help this query, and why


@dataclass(frozen=True)
class ChannelNote:
    """A channel that gave this query nothing to rank by, what the ranker leaned on instead, and
    a sentence a reader understands."""

    channel: str
    # "empty": it ran and found nothing; "off": it did not run; "partial": it ran over part of the
    # namespace
    state: str
    reason: str


NO_SHARED_TERM = ChannelNote(
    LEXICAL,
    "empty",
    "No word of the query occurs in this namespace (common words "
    "are not searched), so the results are ranked by meaning alone.",
)


WORDS_ALONE = "so results are ranked by their words alone"


def meaning_unread(share: float, language: str, query_language: str = "") -> ChannelNote:
    """The vector channel left out: the query (`query_language`, named) or most of the namespace
    is in a language the model does not read."""
    return ChannelNote(
        VECTOR, "off", f"{unread_clause(share, language, query_language, 'This')}, {WORDS_ALONE}."
    )


def unread_clause(share: float, language: str, query_language: str = "", this: str = "this") -> str:
    """Why `meaning_unread` leaves meaning out, as a clause (the weights give it as their reason),
    `this` its first word where the query's language decided."""
    if query_language:
        return (
            f"{this} query is in {query_language}, which the search's meaning model does not read"
        )
    return (
        f"{share:.0%} of the documents here are in {language}, which the search's meaning "
        "model does not read"
    )


def meaning_disagrees(reading: Reading) -> ChannelNote:
    """The vector channel left out: searched for the namespace's own headings, meaning and words
    find the same passages hardly more often than for unrelated headings (`retrieval.agreement`),
    so the model is taken not to read it."""
    return ChannelNote(
        VECTOR,
        "off",
        f"The search's meaning model does not read this namespace's text: "
        f"{reading.clause('its own headings')}, so results are ranked by their words alone.",
    )


@dataclass(frozen=True)
class Ranking:
    kept: list[ScoreDetails]
    dropped: list[ScoreDetails]
    summary: RankSummary

    def details(self) -> dict[int | str, ScoreDetails]:
        return {d.key: d for d in self.kept + self.dropped}


def meaning_models(foreign: Foreign | None) -> ChannelNote | None:
    """The vector channel where some of the namespace's passages were embedded by another model
    than the one that embeds queries (`kb.embedding.compared`): off when all were, and partial
    when some were, as only the model's own passages are searched by meaning."""
    if foreign is None:
        return None
    return ChannelNote(VECTOR, "off" if foreign.whole else "partial", foreign.said())
