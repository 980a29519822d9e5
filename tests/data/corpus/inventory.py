"""A tiny inventory with orders, used by the reference service's test corpus."""

from __future__ import annotations

import json
from collections import defaultdict


class Inventory:
    def __init__(self) -> None:
        self.items: dict[str, int] = defaultdict(int)
        self.prices: dict[str, float] = {}

    def add_item(self, name: str, quantity: int, price: float) -> None:
        self.items[name] += quantity
        self.prices[name] = price

    def remove_item(self, name: str, quantity: int) -> bool:
        if self.items[name] < quantity:
            return False
        self.items[name] -= quantity
        return True

    def total_value(self) -> float:
        return sum(self.prices[name] * count for name, count in self.items.items())

    def to_json(self) -> str:
        return json.dumps({"items": dict(self.items), "prices": self.prices}, sort_keys=True)


def parse_order(line: str) -> tuple[str, int]:
    name, _, quantity = line.partition(",")
    return name.strip(), int(quantity)


def fibonacci(n: int) -> int:
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci(n - 2)
