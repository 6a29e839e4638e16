"""Object storage and the block format: a tablet's rows as Parquet objects whose row groups are the
blocks (at most 8192 rows each, as MatrixOne's), tombstones for deletes on flushed rows, and the
pieces of a merge of small objects.

- `limits`: every bound of the room, checked against each other.
- `errors`: what the room raises.
- `objects`: the object store over a pyarrow filesystem (a local folder, or `s3://`).
- `names`: object names, unique per tablet and sortable by timestamp.
- `footer`: what Quire writes in an object's Parquet footer, versioned and strictly read.
- `blocks`: write one tablet's rows as one object, read chosen blocks and columns, prune blocks.
- `tombstones`: the row ids deleted on flushed blocks, with their delete timestamps.
- `merge`: which small objects to merge, and the merge itself.
"""
