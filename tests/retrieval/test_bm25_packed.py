"""In-memory scoring of packed postings (retrieval/bm25.py), pure: MaxScore's top k against
scoring every posting, on random lists shaped like the packed ones (big-endian views, sorted
chunk offsets), with changed chunks whose packed postings are stale and newer chunks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval import bm25
from retrieval.posting_lists import TermPostings


def packed_term(lexeme, offsets, tfs, lengths, base):
    order = np.argsort(offsets)
    return TermPostings(
        lexeme,
        np.asarray(offsets)[order].astype(">i4"),
        np.asarray(tfs)[order].astype(">i2"),
        np.asarray(lengths)[order].astype(">f4"),
        base,
    )


def packed_by_offset(lexeme, offsets, tfs, length_of, base):
    """A term as the lists hold it: its chunks' lengths looked up in the namespace's array."""
    order = np.argsort(offsets)
    offsets = np.asarray(offsets)[order]
    return TermPostings(
        lexeme,
        offsets.astype(">i4"),
        np.asarray(tfs)[order].astype(">i2"),
        base=base,
        length_of=length_of,
        min_length=float(length_of[offsets].min()),
    )


def table_term(lexeme, ids, tfs, lengths):
    return TermPostings(
        lexeme,
        np.asarray(ids, dtype=">i8"),
        np.asarray(tfs).astype(">i2"),
        np.asarray(lengths).astype(">f4"),
    )


def brute_force(packed, current, changed, weights, avgdl):
    """Each chunk's score summed term by term in plain Python, stale packed postings left out."""
    scores: dict[int, float] = {}
    for term in packed:
        lengths = (
            term.lengths.tolist()
            if term.length_of is None
            else [float(term.length_of[offset]) for offset in term.chunk_ids]
        )
        for offset, tf, length in zip(
            term.chunk_ids.tolist(), term.tfs.tolist(), lengths, strict=True
        ):
            if offset + term.base not in changed:
                scores[offset + term.base] = scores.get(offset + term.base, 0.0) + weights[
                    term.lexeme
                ] * bm25.impact(tf, length, avgdl)
    for term in current:
        for chunk, tf, length in zip(
            term.chunk_ids.tolist(), term.tfs.tolist(), term.lengths.tolist(), strict=True
        ):
            scores[chunk] = scores.get(chunk, 0.0) + weights[term.lexeme] * bm25.impact(
                tf, length, avgdl
            )
    return sorted(scores.items(), key=lambda item: (-round(item[1] * 1e6), item[0]))


def random_lists(seed, chunks=3000, terms=8, changed_share=0.0, newer=0, spread=1):
    """`spread` > 1: chunk ids that far apart (a namespace whose chunks were written among others';
    at 1,000 apart the matched chunks are numbered before they are scored)."""
    rng = np.random.default_rng(seed)
    base = int(rng.integers(1, 10**6))
    packed, weights = [], {}
    length_of = rng.integers(5, 200, chunks * spread).astype(
        np.float32
    )  # one length a chunk, by offset
    for t in range(terms):
        df = int(
            chunks * min(0.9, 0.6 ** (terms - t - 1) + rng.random() * 0.02)
        )  # Zipf-like: one very common
        offsets = rng.choice(chunks, size=max(df, 1), replace=False) * spread
        packed.append(
            packed_by_offset(f"t{t}", offsets, rng.integers(1, 6, len(offsets)), length_of, base)
        )
        weights[f"t{t}"] = float(np.log(1 + (chunks - df + 0.5) / (df + 0.5))) * int(
            rng.integers(1, 3)
        )
    changed = set(
        (
            rng.choice(chunks, size=int(chunks * changed_share), replace=False) * spread + base
        ).tolist()
    )
    rewritten = sorted(changed)[
        : len(changed) // 2
    ]  # the other half was deleted: no current postings
    fresh = rewritten + list(range(base + chunks * spread, base + chunks * spread + newer))
    current = []
    for t in range(terms):
        holders = [c for c in fresh if rng.random() < 0.3]
        current.append(
            table_term(
                f"t{t}",
                holders,
                rng.integers(1, 9, len(holders)),
                rng.integers(5, 200, len(holders)),
            )
        )
    return packed, current, np.array(sorted(changed), dtype=np.int64), weights


def assert_top_k(packed, current, changed, weights, avgdl, k):
    top = bm25.top_k_packed(packed, current, changed, weights, avgdl, k)
    truth = brute_force(packed, current, set(changed.tolist()), weights, avgdl)[:k]
    assert top.ids.tolist() == [chunk for chunk, _ in truth]
    assert top.scores.tolist() == pytest.approx([score for _, score in truth], rel=1e-9)
    everything = bm25.score_postings(packed, current, changed, weights, avgdl)
    assert sorted(everything[0].tolist()) == sorted(
        chunk for chunk, _ in brute_force(packed, current, set(changed.tolist()), weights, avgdl)
    )
    return top


@pytest.mark.parametrize("spread", [1, 1000])
@pytest.mark.parametrize("k", [1, 10, 100, 1000, 5000])
def test_maxscore_returns_the_exhaustive_top_k(k, spread):
    probed = 0
    for seed in range(6):
        packed, current, changed, weights = random_lists(seed, spread=spread)
        top = assert_top_k(packed, current, changed, weights, 80.0, k)
        probed += bool(top.probed_terms)
        assert set(top.scored_terms) | set(top.probed_terms) == set(weights)
    if k <= 100:
        assert probed  # the common terms were only looked up


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    k=st.sampled_from([1, 3, 20, 200]),
    changed_share=st.sampled_from([0, 0.01, 0.2]),
    newer=st.sampled_from([0, 5, 300]),
    avgdl=st.floats(20, 200),
    spread=st.sampled_from([1, 1000]),
)
def test_stale_packed_postings_never_count_and_fresh_ones_always_do(
    seed, k, changed_share, newer, avgdl, spread
):
    packed, current, changed, weights = random_lists(
        seed, chunks=800, terms=6, changed_share=changed_share, newer=newer, spread=spread
    )
    assert_top_k(packed, current, changed, weights, avgdl, k)


def test_a_changed_chunk_with_stale_postings_in_a_probed_term_scores_by_its_current_ones():
    """The stale posting would lift chunk 7 above every other; its current postings do not."""
    base, avgdl = 100, 50.0
    rare = packed_term("rare", [1, 2, 3, 7], [3, 3, 3, 3], [40, 40, 40, 40], base)
    common = packed_term("common", list(range(500)), [1] * 500, [40] * 500, base)
    common.tfs[7 - 0] = 5  # a view of the array: make chunk 7's stale common posting the strongest
    weights = {"rare": 6.0, "common": 0.2}
    current = [table_term("rare", [base + 7], [1], [40]), table_term("common", [], [], [])]
    assert_top_k([rare, common], current, np.array([base + 7]), weights, avgdl, 2)
