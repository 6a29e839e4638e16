"""The TN (transaction node): commits write sets (first committer wins), logs them, publishes
them as logtail.

- `write_set`: what a transaction asks to commit;
- `state`: what the TN checks commits against (row ids, recent deletes, unique keys);
- `pipeline`: the committer thread, group commit, heartbeats, replay of the log;
- `wal_records`: a commit as a log record;
- `limits`, `errors`.
"""
