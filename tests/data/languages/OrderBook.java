package exchange;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/** A limit order book that matches buy and sell orders by price, then time. */
public class OrderBook {
    public enum Side { BUY, SELL }

    public static final class Order {
        final long id;
        final Side side;
        final long price;
        long quantity;
        final long timestamp;

        Order(long id, Side side, long price, long quantity, long timestamp) {
            this.id = id;
            this.side = side;
            this.price = price;
            this.quantity = quantity;
            this.timestamp = timestamp;
        }
    }

    public record Trade(long buyId, long sellId, long price, long quantity) {}

    private final PriorityQueue<Order> bids = new PriorityQueue<>(
        Comparator.comparingLong((Order o) -> -o.price).thenComparingLong(o -> o.timestamp));
    private final PriorityQueue<Order> asks = new PriorityQueue<>(
        Comparator.comparingLong((Order o) -> o.price).thenComparingLong(o -> o.timestamp));
    private long nextId = 1;
    private long clock = 0;

    public List<Trade> submit(Side side, long price, long quantity) {
        if (quantity <= 0) {
            throw new IllegalArgumentException("quantity must be positive");
        }
        Order order = new Order(nextId++, side, price, quantity, clock++);
        List<Trade> trades = new ArrayList<>();
        PriorityQueue<Order> opposite = side == Side.BUY ? asks : bids;
        while (order.quantity > 0 && !opposite.isEmpty() && crosses(order, opposite.peek())) {
            Order best = opposite.peek();
            long filled = Math.min(order.quantity, best.quantity);
            trades.add(side == Side.BUY
                ? new Trade(order.id, best.id, best.price, filled)
                : new Trade(best.id, order.id, best.price, filled));
            order.quantity -= filled;
            best.quantity -= filled;
            if (best.quantity == 0) {
                opposite.poll();
            }
        }
        if (order.quantity > 0) {
            (side == Side.BUY ? bids : asks).add(order);
        }
        return trades;
    }

    private static boolean crosses(Order incoming, Order resting) {
        if (incoming.side == Side.BUY) {
            return incoming.price >= resting.price;
        }
        return incoming.price <= resting.price;
    }

    public boolean cancel(long id) {
        return bids.removeIf(o -> o.id == id) || asks.removeIf(o -> o.id == id);
    }

    public long bestBid() {
        Order top = bids.peek();
        return top == null ? 0 : top.price;
    }

    public long bestAsk() {
        Order top = asks.peek();
        return top == null ? 0 : top.price;
    }

    public long spread() {
        if (bids.isEmpty() || asks.isEmpty()) {
            return -1;
        }
        return bestAsk() - bestBid();
    }

    public long depth(Side side) {
        long total = 0;
        for (Order order : side == Side.BUY ? bids : asks) {
            total += order.quantity;
        }
        return total;
    }
}
