"""A Python job and its workers, each of which reads a little data (a
small file) and hands a result back over a pipe: a worker forked by
multiprocessing ("fork"), one spawned by it ("spawn": a new interpreter,
exec'ed), a child the spawned worker forks itself, and a worker forked by
multiprocessing's fork server (itself a spawned interpreter). With "gpu" the job
first launches on the simulated device (CT_FAKE_CUDA), so every worker
descends from a process that used CUDA; with "cpu" it never does. The
workers' own I/O is far below CUTRACE_HOST_TRACE_KB. Prints one line per
process, "NAME PID", then OK.

usage: py_family.py gpu|cpu FILE
"""
import ctypes
import multiprocessing as mp
import os
import sys
import time


def cuda_launches(n):
    cuda = ctypes.CDLL(os.environ["CT_FAKE_CUDA"])
    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    for call in (lambda: cuda.cuInit(0),
                 lambda: cuda.cuDeviceGet(ctypes.byref(dev), 0),
                 lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                 lambda: cuda.cuCtxSetCurrent(ctx),
                 lambda: cuda.cuModuleLoadData(ctypes.byref(mod), b"x"),
                 lambda: cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"fam__1us")):
        if call() != 0:
            sys.exit("cuda setup failed")
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p,
                                                                  ctypes.c_void_p, ctypes.c_void_p]
    for _ in range(n):
        if launch(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) != 0:
            sys.exit("launch failed")


def read_small(path):
    with open(path, "rb") as f:
        return len(f.read())


def worker(path, conn, fork_one):
    """Reads the file, and with fork_one forks a child that does the same."""
    got = [("worker", os.getpid(), read_small(path))]
    if fork_one:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, b"%d %d" % (os.getpid(), read_small(path)))
            os._exit(0)
        os.close(w)
        child, n = os.read(r, 64).split()
        os.close(r)
        os.waitpid(pid, 0)
        got.append(("grandchild", int(child), int(n)))
    conn.send(got)
    conn.close()


def run(ctx, path, fork_one):
    parent, child = mp.Pipe(duplex=False)
    p = ctx.Process(target=worker, args=(path, child, fork_one))
    p.start()
    child.close()
    got = parent.recv()
    p.join()
    if p.exitcode != 0:
        sys.exit(f"worker exited {p.exitcode}")
    return got


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "gpu":
        cuda_launches(100)
    print("job", os.getpid())
    for name, ctx, fork_one in (("fork", mp.get_context("fork"), False),
                                ("spawn", mp.get_context("spawn"), True),
                                ("forkserver", mp.get_context("forkserver"), False)):
        for who, pid, n in run(ctx, path, fork_one):
            if n <= 0:
                sys.exit(f"{name} {who} read nothing")
            print(f"{name}-{who}", pid)
    print("OK")


if __name__ == "__main__":
    main()
