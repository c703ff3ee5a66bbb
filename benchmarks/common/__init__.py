"""Helpers the benchmark folders share (each script puts ``benchmarks/`` on
``sys.path`` to import them): the machine and versions a run reports, the alternating
timer, the image pooling of the real-data studies."""
# SPDX-License-Identifier: BSD-3-Clause
