// Package lru implements a size-bounded least-recently-used cache.
package lru

import (
	"container/list"
	"errors"
	"sync"
	"time"
)

// ErrNotFound is returned when a key is not in the cache.
var ErrNotFound = errors.New("lru: key not found")

type entry struct {
	key     string
	value   []byte
	expires time.Time
}

// Cache is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	capacity int
	ttl      time.Duration
	order    *list.List
	items    map[string]*list.Element
	hits     int
	misses   int
	now      func() time.Time
}

// New returns a cache holding at most capacity entries for ttl each.
func New(capacity int, ttl time.Duration) *Cache {
	if capacity <= 0 {
		panic("lru: capacity must be positive")
	}
	return &Cache{
		capacity: capacity,
		ttl:      ttl,
		order:    list.New(),
		items:    make(map[string]*list.Element, capacity),
		now:      time.Now,
	}
}

// Get returns the value for key and marks it recently used.
func (c *Cache) Get(key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	elem, ok := c.items[key]
	if !ok {
		c.misses++
		return nil, ErrNotFound
	}
	e := elem.Value.(*entry)
	if c.ttl > 0 && c.now().After(e.expires) {
		c.removeElement(elem)
		c.misses++
		return nil, ErrNotFound
	}
	c.order.MoveToFront(elem)
	c.hits++
	return e.value, nil
}

// Put stores value under key, evicting the oldest entry when full.
func (c *Cache) Put(key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if elem, ok := c.items[key]; ok {
		e := elem.Value.(*entry)
		e.value = value
		e.expires = c.now().Add(c.ttl)
		c.order.MoveToFront(elem)
		return
	}
	e := &entry{key: key, value: value, expires: c.now().Add(c.ttl)}
	c.items[key] = c.order.PushFront(e)
	for c.order.Len() > c.capacity {
		c.removeElement(c.order.Back())
	}
}

// Delete removes key; it reports whether the key was present.
func (c *Cache) Delete(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	elem, ok := c.items[key]
	if !ok {
		return false
	}
	c.removeElement(elem)
	return true
}

func (c *Cache) removeElement(elem *list.Element) {
	c.order.Remove(elem)
	e := elem.Value.(*entry)
	delete(c.items, e.key)
}

// Stats reports hits, misses and the current size.
func (c *Cache) Stats() (hits, misses, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.order.Len()
}

// Keys returns the keys from most to least recently used.
func (c *Cache) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, c.order.Len())
	for elem := c.order.Front(); elem != nil; elem = elem.Next() {
		keys = append(keys, elem.Value.(*entry).key)
	}
	return keys
}
