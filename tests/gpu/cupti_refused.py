"""A program that takes CUPTI before CUDA starts (as a profiler already attached would), then
does GPU work with PyTorch. Under rankscope, the inject library's cuptiSubscribe is then refused:
the run must go on, with a notice saying so. Prints what the holder's subscribe returned.
usage: python3 cupti_refused.py
"""
import ctypes
import glob
import os

import torch  # only imports: CUDA starts at the first tensor on the GPU

candidates = ["libcupti.so.13", "libcupti.so.12", "/usr/local/cuda/lib64/libcupti.so.13",
              "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"]
candidates += glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib",
                                     "libcupti.so*"))
lib = None
for path in candidates:
    try:
        lib = ctypes.CDLL(path)
        break
    except OSError:
        continue
if lib is None:
    raise SystemExit("cupti_refused: no libcupti found")
Callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p)
ignore = Callback(lambda *args: None)
handle = ctypes.c_void_p()
result = lib.cuptiSubscribe(ctypes.byref(handle), ignore, None)
print(f"cupti_refused: holder cuptiSubscribe returned {result} ({path})", flush=True)
x = torch.ones(1 << 20, device="cuda")
print(f"cupti_refused: GPU work done, sum {float((x * 2).sum())}", flush=True)
