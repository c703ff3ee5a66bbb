"""What every speed benchmark prints first: the command, the machine, the versions."""
# SPDX-License-Identifier: BSD-3-Clause

from __future__ import annotations

import os
import platform
import sys

import numpy as np
import sklearn


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
    )
    listed = {"numpy": np.__version__, "sklearn": sklearn.__version__, **versions}
    print(
        "versions: python",
        platform.python_version(),
        *[f"| {name} {version}" for name, version in listed.items()],
    )
