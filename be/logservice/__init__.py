"""The TN's write-ahead log and timestamp oracle, on the replicated journal the FE uses.

- `service`: `LogService`, append / read / truncate over `metadata.journal`'s ReplicatedJournal;
- `tso`: `TimestampOracle`, timestamps reserved a window ahead in the log;
- `group`: group append, concurrent appends sharing one journal entry;
- `lsn`: what an LSN is (a raft index and a position in its entry);
- `entries`: the versioned encoding of the log's entries;
- `state`: the replicated state machine (truncate point, reservations, last LSN) and its state file;
- `truncation`: the per-replica worker that drops entries below the truncate point;
- `stored`: reading committed entries from RocksDB while the journal runs;
- `limits`: `LogLimits`, every bound; `errors`: what the logservice raises.
"""
