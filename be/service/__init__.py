"""A data-plane node's request/response service: how FEs commit on the TN and read on CNs.

- `format`: the requests and replies as versioned, checksummed, self-contained bytes (Arrow IPC
  for tables and schemas);
- `limits`, `errors`;
- `server`: the listening end, with the logtail stream's token handshake;
- `client`: the FE's end, a bounded pool of connections per node.
"""
