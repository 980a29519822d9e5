"""The typed-through index: serve the rest of a cached suggestion the user started typing.

Entries are grouped by ``LineAnchor`` (the lines above and the suffix), then
held in a path-compressed trie over their stored line prefix ``P``. For the
current line prefix ``L`` a lookup walks the trie along ``L`` once - O(len(L)),
never a scan of the cache - collecting every stored ``P`` that is a prefix of
``L``. From the longest ``P`` down (the most recent context first), the first
entry whose text starts with what was typed since, ``L[len(P):]``, and is
longer than it is served: the remaining text is ``text[len(typed):]``. A
partially accepted suggestion (a word, a line) is the same case: the accepted
part is simply part of ``L`` now.
"""

from __future__ import annotations

from cache.entry import CachedCompletion
from cache.keys import LineAnchor


class _Node:
    """A trie node: the edge label leading to it, children by first character, entries."""

    __slots__ = ("label", "children", "entries")

    def __init__(self, label: str) -> None:
        self.label = label
        self.children: dict[str, _Node] = {}
        self.entries: list[CachedCompletion] = []


def _common_length(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class TypedThroughIndex:
    """Cached suggestions by anchor and line prefix, for typed-through lookups."""

    def __init__(self) -> None:
        self._roots: dict[LineAnchor, _Node] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def anchors(self) -> int:
        """How many distinct anchors hold entries."""
        return len(self._roots)

    def add(self, entry: CachedCompletion) -> None:
        """Index ``entry``; an entry with the same place and text is replaced."""
        node = self._roots.get(entry.anchor)
        if node is None:
            node = self._roots[entry.anchor] = _Node("")
        prefix = entry.line_prefix
        i = 0
        while i < len(prefix):
            child = node.children.get(prefix[i])
            if child is None:
                child = node.children[prefix[i]] = _Node(prefix[i:])
                node = child
                break
            label = child.label
            common = _common_length(label, prefix[i:])
            if common < len(label):
                # split the edge: a new inner node for the shared part
                middle = _Node(label[:common])
                child.label = label[common:]
                middle.children[child.label[0]] = child
                node.children[prefix[i]] = middle
                child = middle
            node = child
            i += common
        for j, old in enumerate(node.entries):
            if old.text == entry.text:
                del node.entries[j]
                self._size -= 1
                break
        node.entries.append(entry)
        self._size += 1

    def discard(self, entry: CachedCompletion) -> bool:
        """Remove ``entry`` (by identity) if indexed; prunes empty branches."""
        root = self._roots.get(entry.anchor)
        if root is None:
            return False
        path = [root]
        node = root
        prefix = entry.line_prefix
        i = 0
        while i < len(prefix):
            child = node.children.get(prefix[i])
            if child is None or not prefix.startswith(child.label, i):
                return False
            i += len(child.label)
            node = child
            path.append(node)
        for j, old in enumerate(node.entries):
            if old is entry:
                del node.entries[j]
                break
        else:
            return False
        self._size -= 1
        # prune nodes left without entries and children, bottom up
        while len(path) > 1 and not path[-1].entries and not path[-1].children:
            leaf = path.pop()
            del path[-1].children[leaf.label[0]]
        if not root.entries and not root.children:
            del self._roots[entry.anchor]
        return True

    def lookup(self, anchor: LineAnchor, line_prefix: str) -> tuple[CachedCompletion, str] | None:
        """The entry to continue and the text still to show, or None."""
        for depth, holder in reversed(self._candidates(anchor, line_prefix)):
            typed = line_prefix[depth:]
            for entry in reversed(holder.entries):
                text = entry.text
                if len(text) > len(typed) and text.startswith(typed):
                    return entry, text[len(typed) :]
        return None

    def completed(self, anchor: LineAnchor, line_prefix: str) -> CachedCompletion | None:
        """A one-line answer the user has typed to its very end, or None.

        The model's answer stopped there: it predicted nothing more on this
        line, so asking it again at exactly this point is wasted. An answer
        cut at the token limit (``truncated``) does not count, nor does the
        last line of a multi-line answer (a ``continuation`` entry): that
        answer stopped where the whole answer did, often at its length
        budget in the middle of the line.
        """
        for depth, holder in reversed(self._candidates(anchor, line_prefix)):
            typed = line_prefix[depth:]
            for entry in reversed(holder.entries):
                if (
                    entry.text == typed
                    and "\n" not in entry.text
                    and entry.origin != "continuation"
                    and not entry.truncated
                ):
                    return entry
        return None

    def _candidates(self, anchor: LineAnchor, line_prefix: str) -> list[tuple[int, _Node]]:
        """Trie nodes holding entries along ``line_prefix``, with their depth."""
        node = self._roots.get(anchor)
        if node is None:
            return []
        candidates: list[tuple[int, _Node]] = []
        if node.entries:
            candidates.append((0, node))
        i = 0
        n = len(line_prefix)
        while i < n:
            child = node.children.get(line_prefix[i])
            if child is None or not line_prefix.startswith(child.label, i):
                break
            i += len(child.label)
            node = child
            if node.entries:
                candidates.append((i, node))
        return candidates

    def clear(self) -> None:
        """Forget every entry."""
        self._roots.clear()
        self._size = 0
