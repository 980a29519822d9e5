// Weighted directed graphs: shortest paths and topological order.
#include <algorithm>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace graph {

struct Edge {
    int to;
    double weight;
};

class Graph {
public:
    explicit Graph(int vertices) : adjacency_(vertices) {}

    void addEdge(int from, int to, double weight) {
        if (from < 0 || to < 0 || from >= size() || to >= size()) {
            throw std::out_of_range("vertex out of range");
        }
        adjacency_[from].push_back({to, weight});
        edges_++;
    }

    int size() const { return static_cast<int>(adjacency_.size()); }

    int edges() const { return edges_; }

    const std::vector<Edge>& neighbours(int vertex) const { return adjacency_[vertex]; }

    std::vector<double> shortestPaths(int source) const {
        const double infinity = std::numeric_limits<double>::infinity();
        std::vector<double> distance(size(), infinity);
        using Item = std::pair<double, int>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> frontier;
        distance[source] = 0.0;
        frontier.push({0.0, source});
        while (!frontier.empty()) {
            auto [dist, vertex] = frontier.top();
            frontier.pop();
            if (dist > distance[vertex]) {
                continue;
            }
            for (const Edge& edge : adjacency_[vertex]) {
                double candidate = dist + edge.weight;
                if (candidate < distance[edge.to]) {
                    distance[edge.to] = candidate;
                    frontier.push({candidate, edge.to});
                }
            }
        }
        return distance;
    }

    std::optional<std::vector<int>> topologicalOrder() const {
        std::vector<int> indegree(size(), 0);
        for (const auto& list : adjacency_) {
            for (const Edge& edge : list) {
                indegree[edge.to]++;
            }
        }
        std::queue<int> ready;
        for (int v = 0; v < size(); ++v) {
            if (indegree[v] == 0) {
                ready.push(v);
            }
        }
        std::vector<int> order;
        while (!ready.empty()) {
            int v = ready.front();
            ready.pop();
            order.push_back(v);
            for (const Edge& edge : adjacency_[v]) {
                if (--indegree[edge.to] == 0) {
                    ready.push(edge.to);
                }
            }
        }
        if (static_cast<int>(order.size()) != size()) {
            return std::nullopt;
        }
        return order;
    }

private:
    std::vector<std::vector<Edge>> adjacency_;
    int edges_ = 0;
};

template <typename T>
std::unordered_map<T, int> indexOf(const std::vector<T>& names) {
    std::unordered_map<T, int> index;
    for (int i = 0; i < static_cast<int>(names.size()); ++i) {
        index.emplace(names[i], i);
    }
    return index;
}

double totalWeight(const Graph& g) {
    double total = 0.0;
    for (int v = 0; v < g.size(); ++v) {
        for (const Edge& edge : g.neighbours(v)) {
            total += edge.weight;
        }
    }
    return total;
}

}  // namespace graph
