"""A Python job on the simulated device (CT_FAKE_CUDA) that makes 50
launches, prints READY and sleeps until it is interrupted (at most 60 s).
Python's own SIGINT handler turns an interrupt into KeyboardInterrupt; after
it, the interpreter dies by SIGINT.

usage: py_sleep.py
"""
import ctypes
import os
import sys
import time


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
    for _ in range(50):
        if launch(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) != 0:
            sys.exit("launch failed")
    print("READY", flush=True)
    time.sleep(60)


main()
