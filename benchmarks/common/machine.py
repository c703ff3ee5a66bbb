"""What the benchmarks say about where they ran: the command, the machine, the versions,
and the alternating timer of the speed benchmarks."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import platform
import sys
from time import perf_counter

import numpy as np
import sklearn


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [s.split(":", 1)[1].strip() for s in f if "model name" in s]
    except OSError:
        names = []
    return names[0] if names else (platform.processor() or "cpu")


def machine(device: str = "cpu") -> str:
    """The GPU's name when ``device`` is a CUDA one (and torch sees one), else the
    CPU's with its core count."""
    if device.startswith("cuda"):
        import torch  # only the neural benchmarks have a device

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    return f"{cpu_name()} ({os.cpu_count()} cores)"


def print_machine(**versions: str) -> None:
    """Print the command line, the machine and the library versions (``versions``
    adds more, e.g. ``torch=torch.__version__``)."""
    print("command :", " ".join([os.path.basename(sys.executable), *sys.argv]))
    print(
        "machine :",
        platform.platform(),
        "|",
        platform.processor() or "?",
        "| cpus",
        os.cpu_count(),
        "| load avg {:.1f} {:.1f} {:.1f} (1, 5, 15 min)".format(*os.getloadavg()),
    )
    listed = {"numpy": np.__version__, "sklearn": sklearn.__version__, **versions}
    print(
        "versions: python",
        platform.python_version(),
        *[f"| {name} {version}" for name, version in listed.items()],
    )


def best_alternating(ref, ours, repeat, *args, clock=perf_counter):
    """Best time of ``repeat`` calls of each of ``ref(*args)`` and ``ours(*args)``,
    timed alternately, so that a shared machine's load weighs on both alike.

    Returns ``(t_ref, out_ref, t_ours, out_ours)`` with the last outputs.
    """
    t_ref = t_ours = float("inf")
    for _ in range(repeat):
        start = clock()
        out_ref = ref(*args)
        t_ref = min(t_ref, clock() - start)
        start = clock()
        out_ours = ours(*args)
        t_ours = min(t_ours, clock() - start)
    return t_ref, out_ref, t_ours, out_ours
