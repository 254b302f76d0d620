"""Pareto frontier of two costs to minimise (e.g. USD per million tokens and TPOT). Pure Python."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def pareto_front(items: Iterable[T], x: Callable[[T], float], y: Callable[[T], float]) -> list[T]:
    """The items no other item beats on both ``x`` and ``y`` (lower is better), sorted by ``x``.

    Ties: of items with equal ``x`` only the lowest ``y`` is kept; an item is kept only when its ``y``
    is strictly below every cheaper item's.
    """
    front: list[T] = []
    best_y = float("inf")
    for item in sorted(items, key=lambda i: (x(i), y(i))):
        if y(item) < best_y:
            front.append(item)
            best_y = y(item)
    return front
