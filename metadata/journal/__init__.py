"""The replicated journal: bytes in, committed through Raft, applied to a state machine.

- `replicated`: `ReplicatedJournal`, what callers use, and the `StateMachine` it applies entries to;
- `limits`: `JournalLimits`, every bound and timeout;
- `errors`: what it raises;
- `raft`: pysyncobj with Quire's corrections, the only module that touches pysyncobj's internals;
- `log`: `RocksJournal`, the raft log in RocksDB.
"""
