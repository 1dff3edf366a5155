"""``python3 -m collie.agent --stdio``: the remote agent (see :mod:`collie.remote.agent`).

This is the one command line a launcher runs on a host; it never carries data (hosts, workloads travel in the
JSON-lines protocol on stdin and stdout). Before importing the agent it checks that the host's python3 can run it
(:mod:`collie.remote.deps`), so a missing module is one line on stderr and exit status 1.
"""

import sys

from collie.remote.deps import require


def _main() -> int:
    require()
    from collie.remote.agent import main  # after the check: its imports need what the check verifies

    return main()


if __name__ == "__main__":
    sys.exit(_main())
