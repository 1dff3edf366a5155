"""``python3 -m collie.agent --stdio``: the remote agent (see :mod:`collie.remote.agent`).

This is the one command line a launcher runs on a host; it never carries data (hosts, workloads travel in the
JSON-lines protocol on stdin and stdout).
"""

import sys

from collie.remote.agent import main

if __name__ == "__main__":
    sys.exit(main())
