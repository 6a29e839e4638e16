"""`quire` run with cProfile on every thread; the merged profile is written on exit.

    python tests/bench/profiled_quire.py PROFILE_FILE up --override ...

The benchmarks start Quire this way with --profile; `python -m pstats PROFILE_FILE` reads it.
With QUIRE_PROFILE_TIMER=cpu in the environment each thread's profile counts its CPU time
(time.thread_time) instead of the wall clock, so waiting costs nothing: where the CPU goes.
"""

from __future__ import annotations

import atexit
import cProfile
import os
import pstats
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fe import cli  # noqa: E402

_profiles: list[cProfile.Profile] = []
_lock = threading.Lock()


def _profile_this_thread(*_) -> None:
    sys.setprofile(None)
    if os.environ.get("QUIRE_PROFILE_TIMER") == "cpu":
        profile = cProfile.Profile(time.thread_time)
    else:
        profile = cProfile.Profile()
    with _lock:
        _profiles.append(profile)
    profile.enable()


def _write(path: str) -> None:
    with _lock:
        profiles = list(_profiles)
    for profile in profiles:
        profile.disable()
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    stats.dump_stats(path)


if __name__ == "__main__":
    output = sys.argv[1]
    threading.setprofile(_profile_this_thread)
    _profile_this_thread()
    atexit.register(_write, output)
    sys.exit(cli.main(sys.argv[2:]))
