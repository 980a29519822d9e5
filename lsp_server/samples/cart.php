<?php
// A shopping cart with line items.
namespace Shop;

class Cart
{
    private array $lines = [];

    public function add(string $sku, int $count): void
    {
        $current = $this->lines[$sku] ?? 0;
        $this->lines[$sku] = $current + $count;
    }

    public function remove(string $sku, int $count): void
    {
        $current = $this->lines[$sku] ?? 0;
        $this->lines[$sku] = $current - $count;
    }

    public function total(): int
    {
        $sum = 0;
        foreach ($this->lines as $count) {
            $sum += $count;
        }
        return $sum;
    }
}

function double_it(int $n): int
{
    $total = $n + $n;
    return $total;
}
