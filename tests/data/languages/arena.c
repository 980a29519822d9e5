/* A bump allocator with chained blocks and a string interner on top. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK_SIZE 4096
#define INTERN_BUCKETS 256

struct block {
    struct block *next;
    size_t used;
    size_t size;
    unsigned char data[];
};

struct arena {
    struct block *head;
    size_t total;
};

struct interned {
    struct interned *next;
    uint32_t hash;
    size_t length;
    char text[];
};

struct interner {
    struct arena *arena;
    struct interned *buckets[INTERN_BUCKETS];
    size_t count;
};

static size_t align_up(size_t n, size_t alignment) {
    return (n + alignment - 1) & ~(alignment - 1);
}

static struct block *block_new(size_t size) {
    struct block *b = malloc(sizeof(struct block) + size);
    if (b == NULL) {
        return NULL;
    }
    b->next = NULL;
    b->used = 0;
    b->size = size;
    return b;
}

void arena_init(struct arena *a) {
    a->head = NULL;
    a->total = 0;
}

void *arena_alloc(struct arena *a, size_t size) {
    size = align_up(size, sizeof(void *));
    if (a->head == NULL || a->head->used + size > a->head->size) {
        size_t want = size > ARENA_BLOCK_SIZE ? size : ARENA_BLOCK_SIZE;
        struct block *b = block_new(want);
        if (b == NULL) {
            return NULL;
        }
        b->next = a->head;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += size;
    a->total += size;
    return p;
}

void arena_free(struct arena *a) {
    struct block *b = a->head;
    while (b != NULL) {
        struct block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->total = 0;
}

static uint32_t fnv1a(const char *s, size_t n) {
    uint32_t hash = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        hash ^= (unsigned char)s[i];
        hash *= 16777619u;
    }
    return hash;
}

void interner_init(struct interner *in, struct arena *a) {
    memset(in, 0, sizeof(*in));
    in->arena = a;
}

const char *intern(struct interner *in, const char *s, size_t n) {
    uint32_t hash = fnv1a(s, n);
    struct interned **slot = &in->buckets[hash % INTERN_BUCKETS];
    for (struct interned *it = *slot; it != NULL; it = it->next) {
        if (it->hash == hash && it->length == n && memcmp(it->text, s, n) == 0) {
            return it->text;
        }
    }
    struct interned *it = arena_alloc(in->arena, sizeof(struct interned) + n + 1);
    if (it == NULL) {
        return NULL;
    }
    it->hash = hash;
    it->length = n;
    memcpy(it->text, s, n);
    it->text[n] = '\0';
    it->next = *slot;
    *slot = it;
    in->count++;
    return it->text;
}
