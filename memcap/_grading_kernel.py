"""Start an IPython kernel for grading: resource limits and no network, then ipykernel as usual.

Run by :mod:`memcap.grading` as ``python -m memcap._grading_kernel -f CONNECTION_FILE`` (inside
bubblewrap when available). Before the student's first line runs, this process

- forgets the grader's process id (see :func:`main`);
- caps the size of any file it writes (``MEMCAP_GRADE_MAX_FILE_BYTES``) and turns off core dumps;
- refuses every Internet socket connection from Python (``socket.connect``/``sendto`` on IPv4 and
  IPv6 raise ``PermissionError``). The kernel talks to the grader over ZeroMQ, which does not use
  Python's socket module. Inside bubblewrap the kernel also has no network interface at all, which
  covers subprocesses and C extensions too; without it this guard is Python-level only.
"""
from __future__ import annotations

import os
import resource
import socket
import sys


def _limit_files() -> None:
    limit = int(os.environ.get("MEMCAP_GRADE_MAX_FILE_BYTES", str(64 * 2**20)))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _no_network() -> None:
    internet = {socket.AF_INET, socket.AF_INET6}

    def guard(method):
        def refuse(self, *args, **kwargs):
            if self.family in internet:
                raise PermissionError("network access is disabled while a notebook is graded")
            return method(self, *args, **kwargs)
        return refuse

    for name in ("connect", "connect_ex", "sendto"):
        setattr(socket.socket, name, guard(getattr(socket.socket, name)))


def main() -> None:
    _limit_files()
    _no_network()
    # Inside bubblewrap's process namespace the kernel's parent is that namespace's init (pid 1), which
    # ipykernel's parent poller takes for "the grader has exited"; bubblewrap ends the kernel with the
    # grader instead (--die-with-parent).
    os.environ.pop("JPY_PARENT_PID", None)
    from ipykernel import kernelapp

    sys.argv[0] = "memcap-grading-kernel"
    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
