"""The engine: the subscription trie and what the default matcher adds to it.

``trie`` (:class:`~.trie.TrieIndex`: the writers, snapshots, the lock-free reads) over ``walk``
(its node and lookup walks, and the memo of unions); ``dfa``, the automaton a batch walks;
``cache``, the default's result cache, which indexes the topics it holds in ``topic_trie`` (the
trie of topics, walked by a pattern; the retained-topic index uses it too); ``governor``, the one
rule by which the memo and the cache turn themselves off where they do not pay.
docs/implementation.md draws how a lookup goes through them.
"""
