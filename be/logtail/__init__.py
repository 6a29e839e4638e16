"""Logtail: what the TN tells CNs about committed changes (MatrixOne's TN-to-CN log sync).

- `entries`: the shapes a commit's changes take in memory (inserts, deletes, heartbeats).
- `format`: a commit and the stream's messages as versioned, checksummed, self-contained bytes.
- `limits`: every bound and timeout of the room; `errors`: what it raises.
- `table`: the logtail table, committed transactions in pages for pulls by time range.
- `stream`: frames and the token handshake both ends of a stream share.
- `push`: the TN's push server; `subscriber`: the CN's end.
"""
