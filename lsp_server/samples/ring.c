/* A fixed-size ring buffer of integers. */
#include <stddef.h>

struct ring {
    int items[16];
    size_t head;
    size_t count;
};

int ring_push(struct ring *r, int value) {
    if (r->count == 16) {
        return -1;
    }
    r->items[(r->head + r->count) % 16] = value;
    r->count++;
    return 0;
}

int ring_pop(struct ring *r, int *out) {
    if (r->count == 0) {
        return -1;
    }
    *out = r->items[r->head];
    r->head = (r->head + 1) % 16;
    r->count--;
    return 0;
}

static int twice(int n) {
    int total = n + n;
    return total;
}

static int thrice(int n) {
    int total = n + n + n;
    return total;
}
