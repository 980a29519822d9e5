// A typed inventory with reservations.
export interface Item {
  sku: string;
  count: number;
}

export function restock(item: Item, amount: number): Item {
  const count = item.count + amount;
  return { sku: item.sku, count };
}

export function withdraw(item: Item, amount: number): Item {
  const count = item.count - amount;
  return { sku: item.sku, count };
}

export class Inventory {
  private items = new Map<string, Item>();

  add(item: Item): void {
    if (this.items.has(item.sku)) {
      throw new Error(`duplicate sku ${item.sku}`);
    }
    this.items.set(item.sku, item);
  }

  total(): number {
    let sum = 0;
    for (const item of this.items.values()) {
      sum += item.count;
    }
    return sum;
  }
}

export const lowStock = (inventory: Inventory, limit: number): boolean => {
  const total = inventory.total();
  return total < limit;
};

namespace Reports {
  export function line(item: Item): string {
    return `${item.sku}: ${item.count}`;
  }
}
