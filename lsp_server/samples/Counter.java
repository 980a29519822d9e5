// A counter of named events.
package samples;

import java.util.HashMap;
import java.util.Map;

public class Counter {
    private final Map<String, Integer> counts = new HashMap<>();

    public void increment(String name) {
        int current = counts.getOrDefault(name, 0);
        counts.put(name, current + 1);
    }

    public void decrement(String name) {
        int current = counts.getOrDefault(name, 0);
        counts.put(name, current - 1);
    }

    public int total() {
        int sum = 0;
        for (int value : counts.values()) {
            sum += value;
        }
        return sum;
    }

    interface Listener {
        void changed(String name);
    }
}
