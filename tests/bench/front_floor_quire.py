"""`quire up` whose MySQL front answers every execution of a prepared statement with the answer of
its first execution (a SELECT's rows, an UPDATE's OK, BEGIN's): the session and the data plane are
skipped, the rest of the front (event loop, packet reading, parameter decoding, result encoding,
socket writes) runs as always.

    python tests/bench/front_floor_quire.py up --override ...

bench_sysbench.py --floor starts it once Quire has stopped: the transactions per second of each
workload against it are what Quire's front allows on this machine whatever the statements cost,
a floor under the ratio to MariaDB.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fe import cli  # noqa: E402
from fe.mysql.connection import Connection  # noqa: E402
from fe.session import QuireSession  # noqa: E402

_answered = Connection._run
_executed = QuireSession.execute_prepared
_first_answers: dict[object, object] = {}


async def _first_answer_again(self, running, info, command):
    kept = _first_answers.get(info) if command == "Execute" else None
    if kept is not None:
        running.close()  # never started: the session does nothing
        return dataclasses.replace(kept)
    result = await _answered(self, running, info, command)
    streamed = hasattr(result.rows, "__aiter__")
    if command == "Execute" and not streamed:
        result.rows = list(result.rows)
        _first_answers[info] = dataclasses.replace(result)
    return result


async def _first_execution_again(self, prepared, values, attrs):
    """A statement prepared with a plan is executed by the session, not through _run."""
    kept = _first_answers.get(prepared)
    if kept is not None:
        return dataclasses.replace(kept)
    result = await _executed(self, prepared, values, attrs)
    if not hasattr(result.rows, "__aiter__"):
        result.rows = list(result.rows)
        _first_answers[prepared] = dataclasses.replace(result)
    return result


if __name__ == "__main__":
    Connection._run = _first_answer_again
    QuireSession.execute_prepared = _first_execution_again
    sys.exit(cli.main(sys.argv[1:]))
