"""Start an IPython kernel for grading: limits, an unprivileged user, no network, then ipykernel as usual.

Run by :mod:`memcap.textbook.grading` as
``python -m memcap.textbook._grading_kernel [limits] -f CONNECTION_FILE`` (inside
bubblewrap unless the instructor chose ``--sandbox none``). Before the student's first line runs, this
process

- sets hard resource limits that it and every process it starts inherit and cannot raise: address space
  (``--memory``), processes and threads of its user (``--processes``), size of a written file
  (``--file-size``), open files (``--open-files``), no core dumps;
- forbids gaining privileges (``PR_SET_NO_NEW_PRIVS``: set-user-id programs run without their
  owner's rights) and, when started as root (``--user``), becomes that unprivileged user, so that the
  process limit counts only the kernel's own processes and no capability is left;
- with ``--copy-from``, copies the submission (a read-only mount) into its private working folder;
- refuses Internet connections made through Python's ``socket`` module (a second line of defence:
  inside bubblewrap the kernel has no network interface at all, which also stops subprocesses and C
  extensions; without bubblewrap those can still reach the network).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import socket
import sys

_PR_SET_NO_NEW_PRIVS = 38


def _limit(memory: int, processes: int, file_size: int, open_files: int) -> None:
    for which, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_NPROC, processes),
                         (resource.RLIMIT_FSIZE, file_size), (resource.RLIMIT_NOFILE, open_files),
                         (resource.RLIMIT_CORE, 0)):
        if value >= 0:
            resource.setrlimit(which, (value, value))


def _no_new_privileges() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def _become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memcap-grading-kernel")
    parser.add_argument("--memory", type=int, default=-1, help="bytes of address space per process")
    parser.add_argument("--processes", type=int, default=-1, help="processes and threads of the user")
    parser.add_argument("--file-size", type=int, default=-1, help="bytes per written file")
    parser.add_argument("--open-files", type=int, default=-1, help="open file descriptors")
    parser.add_argument("--user", type=int, default=None, help="unprivileged user id to become")
    parser.add_argument("--copy-from", default=None, help="folder whose files to copy into the working folder")
    args, rest = parser.parse_known_args(argv)
    _limit(args.memory, args.processes, args.file_size, args.open_files)
    _no_new_privileges()
    if args.user is not None and os.geteuid() == 0:
        _become(args.user)
    if args.copy_from:
        for entry in os.scandir(args.copy_from):
            copy = shutil.copytree if entry.is_dir() else shutil.copy2
            copy(entry.path, entry.name)
    _no_network()
    # Inside bubblewrap's process namespace the kernel's parent is that namespace's init (pid 1), which
    # ipykernel's parent poller takes for "the grader has exited"; bubblewrap ends the kernel with the
    # grader instead (--die-with-parent), and so does the grader's process-group kill without it.
    os.environ.pop("JPY_PARENT_PID", None)
    from ipykernel import kernelapp

    sys.argv = ["memcap-grading-kernel", *rest]
    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()
