// A small dense matrix.
#include <vector>

namespace linalg {

class Matrix {
    int rows_;
    int cols_;

public:
    Matrix(int rows, int cols) : rows_(rows), cols_(cols), data_(rows * cols) {}

    double at(int r, int c) const {
        int index = r * cols_ + c;
        return data_[index];
    }

    void set(int r, int c, double value) {
        int index = r * cols_ + c;
        data_[index] = value;
    }

    double trace() const {
        double sum = 0;
        for (int i = 0; i < rows_; ++i) {
            sum += at(i, i);
        }
        return sum;
    }

private:
    std::vector<double> data_;
};

int square(int n) {
    int total = n * n;
    return total;
}

int cube(int n) {
    int total = n * n * n;
    return total;
}

}  // namespace linalg
