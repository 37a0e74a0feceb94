"""Fewer repeats in a result list: duplicates collapsed to their best copy, and maximal marginal
relevance (MMR) over the head of the list. Pure, and indifferent to what an item is: items carry
`key`, `relevance` and `kind`; the ranker turns the answers into its explained decisions."""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Sequence


def normalise_text(text: str) -> str:
    """What two passages must share to count as the same text: words, case folded."""
    return " ".join(text.split()).lower()


def first_of_each(
    pool: Sequence[Any], key_of: Callable[[Any], str]
) -> tuple[list[Any], list[tuple[Any, Hashable]]]:
    """Items in order, keeping the first of each group of equal (non-empty) keys; the others come
    back with the key of the item they repeat."""
    seen: dict[str, Hashable] = {}
    kept, repeats = [], []
    for item in pool:
        key = key_of(item)
        if key and key in seen:
            repeats.append((item, seen[key]))
        else:
            if key:
                seen[key] = item.key
            kept.append(item)
    return kept, repeats


def mmr_order(
    pool: Sequence[Any],
    embeddings: dict[Hashable, Sequence[float] | None],
    *,
    lam: float,
    depth: int,
    seed_ratio: float,
) -> list[tuple[Any, float, float]]:
    """(item, score, similarity penalty) in MMR order. The first `depth` items are reordered,
    seeded with the best item of each kind whose relevance reaches `seed_ratio` of the top; the
    rest keep their relevance order after them, scored no higher than the head's lowest."""
    if not pool:
        return []
    head, tail = list(pool[:depth]), pool[depth:]
    unit = {item.key: _unit(embeddings.get(item.key)) for item in head}
    top = head[0].relevance
    selected: list[tuple[Any, float, float]] = []
    remaining = list(head)
    seen_kinds = set()
    for item in list(remaining):
        if item.kind not in seen_kinds and item.relevance >= top * seed_ratio:
            seen_kinds.add(item.kind)
            selected.append((item, item.relevance, 0.0))
            remaining.remove(item)
    while remaining:
        best, best_value, best_penalty = None, -math.inf, 0.0
        for item in remaining:
            similarity = max(
                (_dot(unit[item.key], unit[chosen.key]) for chosen, _, _ in selected), default=0.0
            )
            value = lam * item.relevance - (1 - lam) * similarity
            if value > best_value + 1e-12:
                best, best_value, best_penalty = item, value, (1 - lam) * similarity
        selected.append((best, best_value, best_penalty))
        remaining.remove(best)
    floor = min((score for _, score, _ in selected), default=0.0)
    return selected + [(item, min(item.relevance, floor), 0.0) for item in tail]


def _unit(vector: Sequence[float] | None) -> tuple[float, ...] | None:
    if not vector:
        return None
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(x / norm for x in vector) if norm else None


def _dot(a: tuple[float, ...] | None, b: tuple[float, ...] | None) -> float:
    if a is None or b is None:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=False))
