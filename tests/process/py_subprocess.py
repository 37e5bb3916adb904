"""A Python job on the simulated device that runs commands with Python's own
subprocess module (vfork, close_range over every descriptor, dup2, execve in
the child) between launches, then writes a file of its own and reads it back.
Prints OK when the file holds exactly what it wrote.

usage: py_subprocess.py FILE   (CT_FAKE_CUDA: the simulated libcuda.so.1)
"""
import ctypes
import os
import subprocess
import sys


def main():
    cuda = ctypes.CDLL(os.environ["CT_FAKE_CUDA"])
    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    for call in (lambda: cuda.cuInit(0),
                 lambda: cuda.cuDeviceGet(ctypes.byref(dev), 0),
                 lambda: cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
                 lambda: cuda.cuCtxSetCurrent(ctx),
                 lambda: cuda.cuModuleLoadData(ctypes.byref(mod), b"x"),
                 lambda: cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"py__1us")):
        if call() != 0:
            sys.exit("cuda setup failed")
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p,
                                                                  ctypes.c_void_p, ctypes.c_void_p]

    def launches(n):
        for _ in range(n):
            if launch(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) != 0:
                sys.exit("launch failed")

    launches(1000)
    for _ in range(3):
        subprocess.run(["/bin/sh", "-c", "exit 0"], check=True, close_fds=True)
        subprocess.run(["true"], check=True, stdout=subprocess.DEVNULL)
    with open(sys.argv[1], "wb") as f:
        launches(1000)
        f.write(b"user data")
    with open(sys.argv[1], "rb") as f:
        got = f.read()
    if got != b"user data":
        sys.exit(f"{sys.argv[1]} holds {len(got)} bytes, not the 9 written")
    print("OK")


main()
