"""A small stock ledger for a workshop: parts, bins and reorder alerts."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Part:
    """One kind of part kept in stock."""

    sku: str
    name: str
    unit_price: float
    reorder_level: int = 5
    tags: list[str] = field(default_factory=list)

    def label(self) -> str:
        """A one-line description for pick lists."""
        return f"{self.sku} {self.name} ({self.unit_price:.2f} €)"


@dataclass
class Bin:
    """A shelf location holding a quantity of one part."""

    location: str
    sku: str
    quantity: int = 0


class OutOfStock(Exception):
    """Raised when a withdrawal asks for more than is on the shelves."""

    def __init__(self, sku: str, wanted: int, available: int) -> None:
        super().__init__(f"{sku}: wanted {wanted}, only {available} left")
        self.sku = sku
        self.wanted = wanted
        self.available = available


class Inventory:
    """Parts and the bins they live in."""

    def __init__(self) -> None:
        self.parts: dict[str, Part] = {}
        self.bins: dict[str, Bin] = {}

    def add_part(self, part: Part) -> None:
        """Register a new kind of part."""
        if part.sku in self.parts:
            raise ValueError(f"duplicate sku {part.sku}")
        self.parts[part.sku] = part

    def stock(self, location: str, sku: str, quantity: int) -> Bin:
        """Put ``quantity`` units of ``sku`` into the bin at ``location``."""
        if sku not in self.parts:
            raise KeyError(sku)
        bin_ = self.bins.get(location)
        if bin_ is None:
            bin_ = Bin(location, sku)
            self.bins[location] = bin_
        elif bin_.sku != sku:
            raise ValueError(f"bin {location} already holds {bin_.sku}")
        bin_.quantity += quantity
        return bin_

    def on_hand(self, sku: str) -> int:
        """Units of ``sku`` across every bin."""
        return sum(b.quantity for b in self.bins.values() if b.sku == sku)

    def withdraw(self, sku: str, quantity: int) -> list[tuple[str, int]]:
        """Take units from the bins in location order; return what came from where."""
        available = self.on_hand(sku)
        if quantity > available:
            raise OutOfStock(sku, quantity, available)
        taken: list[tuple[str, int]] = []
        remaining = quantity
        for location in sorted(self.bins):
            bin_ = self.bins[location]
            if bin_.sku != sku or bin_.quantity == 0:
                continue
            step = min(bin_.quantity, remaining)
            bin_.quantity -= step
            remaining -= step
            taken.append((location, step))
            if remaining == 0:
                break
        return taken

    def value(self) -> float:
        """The stock's total value at unit prices."""
        total = 0.0
        for bin_ in self.bins.values():
            part = self.parts[bin_.sku]
            total += part.unit_price * bin_.quantity
        return round(total, 2)

    def reorder_list(self) -> list[Part]:
        """Parts at or below their reorder level."""
        low = []
        for sku, part in sorted(self.parts.items()):
            if self.on_hand(sku) <= part.reorder_level:
                low.append(part)
        return low


def load_parts(path: Path) -> list[Part]:
    """Read parts from a CSV file with a header row."""
    parts = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            tags = [t.strip() for t in row.get("tags", "").split(";") if t.strip()]
            parts.append(
                Part(
                    sku=row["sku"],
                    name=row["name"],
                    unit_price=float(row["unit_price"]),
                    reorder_level=int(row.get("reorder_level") or 5),
                    tags=tags,
                )
            )
    return parts


def snapshot(inventory: Inventory) -> str:
    """The inventory as stable, human-readable JSON."""
    data = {
        "parts": {sku: part.name for sku, part in inventory.parts.items()},
        "bins": {loc: [b.sku, b.quantity] for loc, b in inventory.bins.items()},
        "value": inventory.value(),
    }
    return json.dumps(data, indent=2, sort_keys=True)


def restore(text: str, parts: list[Part]) -> Inventory:
    """Rebuild an inventory from ``snapshot`` output."""
    data = json.loads(text)
    inventory = Inventory()
    for part in parts:
        inventory.add_part(part)
    for location, (sku, quantity) in data["bins"].items():
        inventory.stock(location, sku, quantity)
    return inventory
