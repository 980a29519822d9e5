"""The hybrid policy: an LRU-K region for hot keys, an ARC region for the long tail.

``policy`` is the cache; ``balance`` how the context weight alpha sizes the
two regions; ``bursts`` the correlated-reference window, so that a burst of
requests counts once.
"""
