"""The processes around bwrap (grader.runtime.sandbox): the launcher that starts it with the
limits and reaps what it leaves, the seccomp filter it installs, and the first step inside (its
/tmp and /dev/shm handed out, root's step down to the sandbox's own uid). Plain text and bytes:
they run before anything of the course is imported."""
from __future__ import annotations

# the launcher: runs outside the sandbox, the parent of bwrap (no imports of the course, fast).
# It is a child subreaper and reaps everything below it before it exits: bwrap hands back the
# command's exit status before the sandbox's init in its pid namespace has ended, and that init,
# orphaned, would otherwise go to pid 1 (which on some machines never reaps it). bwrap dies with
# it (PR_SET_PDEATHSIG), and the sandbox with bwrap (--die-with-parent). And it kills bwrap when its
# own parent is gone: nbgrader killed from outside (an out-of-memory killer, a cohort's kill of a
# stuck job) left it, bwrap and a hostile kernel running for good (2026-11-27, test_cohort's `hang`).
# It watches getppid() rather than asking for PR_SET_PDEATHSIG itself: that signal comes when the
# *thread* that started it ends, and a grader may start a kernel from a thread that ends first.
# With a `handoff` path (a sized /tmp), it passes the sandbox's /tmp and /dev/shm, which INSIDE
# opens, on to the Box listening there, before anything of the student's runs: open, they keep
# what the sandbox wrote readable after every process of it has ended (Box.look), so a limit
# reached is named whether or not a poll of the watch happened to see it.
LAUNCH = r"""
import ctypes, json, os, resource, signal, socket, sys, threading, time
s = json.loads(sys.argv[1])
for name, v in s["rlimits"].items():
    soft, hard = resource.getrlimit(getattr(resource, name))
    v = v if hard == resource.RLIM_INFINITY else min(v, hard)
    resource.setrlimit(getattr(resource, name), (v, v))
if s.get("seccomp"):  # the filter's bytes on a pipe whose number bwrap reads from its argv
    r, w = os.pipe()
    os.write(w, bytes.fromhex(s["seccomp"]))
    os.close(w)
    os.set_inheritable(r, True)
    s["argv"] = [str(r) if a == "@SECCOMP_FD@" else a for a in s["argv"]]
if s.get("handoff"):  # a socket that bwrap passes on to INSIDE
    mine, theirs = socket.socketpair()
    os.set_inheritable(theirs.fileno(), True)
    s["argv"] = [str(theirs.fileno()) if a == "@HANDOFF_FD@" else a for a in s["argv"]]
env = {k: v for k, v in os.environ.items() if k in s["env_exact"] or k.startswith(tuple(s["env_prefixes"]))}
env.update(s["env"])
for k in s["unset"]:
    env.pop(k, None)
try:
    prctl = ctypes.CDLL(None).prctl
    prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except (OSError, AttributeError):
    prctl = None
me = os.getpid()
pid = os.fork()
if pid == 0:
    if prctl is not None:
        prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: bwrap dies with this launcher
    if os.getppid() != me:
        os._exit(1)
    os.execve(s["argv"][0], s["argv"], env)
def forward(n, _):  # a signal for the sandbox goes to bwrap
    try:
        os.kill(pid, n)
    except ProcessLookupError:
        pass  # bwrap has already ended: the loop below reaps what is left
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, forward)
# the grader that started us gone (killed from outside, where no stop of ours ran): the sandbox
# goes with it, not on for good
def orphaned(parent, every=0.5):
    while os.getppid() == parent:
        time.sleep(every)
    forward(signal.SIGKILL, None)  # bwrap; the sandbox's init dies with it (--die-with-parent)
threading.Thread(target=orphaned, args=(os.getppid(),), daemon=True).start()
if s.get("handoff"):
    theirs.close()
    try:  # nothing comes when bwrap failed before running INSIDE (it then exits, saying why)
        _, fds, _, _ = socket.recv_fds(mine, 16, 4)
    except OSError:
        fds = []
    if fds:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as box:
                box.connect(s["handoff"])
                socket.send_fds(box, [b"tmpfs"], fds)
            mine.send(b"k")  # INSIDE goes on only now
        except OSError as e:  # fail closed: INSIDE runs nothing without the acknowledgement
            sys.stderr.write(f"sandbox: its /tmp could not be handed to the grader's watch ({e}); nothing was run\n")
        for fd in fds:
            os.close(fd)
    mine.close()
status = 0
while True:
    try:
        p, st = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    except InterruptedError:
        continue
    if p == pid:
        status = st
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def seccomp_no_sysv_shm() -> bytes:
    """A classic-BPF seccomp program: shmget (System V shared memory, which outlives every
    process that maps it and no per-process limit counts) fails with EPERM; all else is allowed.
    Nothing the course runs uses it (CUDA, NumPy, IPython, the emulator)."""
    import struct

    ld, jeq, ret = 0x20, 0x15, 0x06
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    x86_64, i386, aarch64 = 0xC000003E, 0x40000003, 0xC00000B7
    prog = [  # (code, jt, jf, k); jumps count from the next instruction; 12: allow, 13: deny
        (ld, 0, 0, 4),                       # 0: arch
        (jeq, 0, 3, x86_64),                 # 1
        (ld, 0, 0, 0),                       # 2: syscall number
        (jeq, 9, 0, 29),                     # 3: shmget
        (jeq, 8, 7, 0x40000000 | 29),        # 4: shmget, x32
        (jeq, 0, 3, i386),                   # 5
        (ld, 0, 0, 0),                       # 6
        (jeq, 5, 0, 117),                    # 7: ipc (every System V call of i386)
        (jeq, 4, 3, 395),                    # 8: shmget
        (jeq, 0, 2, aarch64),                # 9
        (ld, 0, 0, 0),                       # 10
        (jeq, 1, 0, 194),                    # 11: shmget
        (ret, 0, 0, allow),                  # 12
        (ret, 0, 0, deny),                   # 13
    ]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


# inside the sandbox, first (argv: the handoff socket's fd or "-", the uid to become or "-", the
# process limit or "-", the command): hand its /tmp and /dev/shm, open, to the launcher and wait
# until they reached the grader; in root's case become the sandbox's uid; set the process limit here,
# in the sandbox's own user namespace, where it counts this sandbox's threads only (set outside, it
# counted every thread of the user, so one hand-in holding its share left none to a sandbox graded
# beside it); then run the command (which gets neither)
INSIDE = r"""
import os, sys
fd, uid, nproc, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
if fd != "-":
    import socket
    s = socket.socket(fileno=int(fd))
    ds = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in ("/tmp", "/dev/shm")]
    socket.send_fds(s, [b"tmpfs"], ds)
    if s.recv(1) != b"k":
        os._exit(1)  # the launcher said why
    s.close()
    for d in ds:
        os.close(d)
if nproc != "-":
    import resource
    resource.setrlimit(resource.RLIMIT_NPROC, (int(nproc), int(nproc)))
if uid != "-":
    u = int(uid)
    os.setgroups([])
    os.setgid(u)
    os.setuid(u)
os.execvp(cmd[0], cmd)
"""
