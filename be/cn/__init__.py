"""The CN (compute node): keeps the logtail of the tables it serves and answers snapshot reads.

- `table_state`: one table's rows in memory and its deletes, and the snapshot at a timestamp;
- `node`: the tables, the watermark (everything up to it has arrived), waiting for a timestamp.
"""
