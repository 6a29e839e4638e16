"""Logtail: what the TN tells CNs about committed changes (MatrixOne's TN-to-CN log sync).

- `entries`: the shapes a commit's changes take in memory (inserts, deletes, heartbeats).
"""
