"""The native loop's own ceiling on a fake provider written in C (ops.post_send walks the chain and queues a
completion per signalled WR, ops.poll_cq returns them): the cases of bench/engine_ceiling.py, one worker.

    python3 build.py && python3 bench_fake.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _native_loop

CASES = [  # name, batch, signal_every, sq_depth (as bench/engine_ceiling.py)
    ("single WRs, 1 completion per 100", 1, 100, 128),
    ("single WRs, every WR signalled", 1, 1, 128),
    ("post lists of 8", 8, 8, 128),
    ("post lists of 32", 32, 32, 128),
]


def main() -> int:
    for name, batch, every, depth in CASES:
        qp, cq = _native_loop.fake()
        wrs, secs, posts, polls, err, _ = _native_loop.run_write(qp, cq, 0x1000, 1, 0x2000, 2, 64, 1.0, batch, every,
                                                                 depth)
        assert err == 0, err
        print(f"{name:<36} {wrs / secs:>14,.0f} WRs/s  ({posts:,} posts, {polls:,} polls)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
