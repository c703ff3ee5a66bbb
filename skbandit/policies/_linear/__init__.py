"""Linear and kernel ridge policies: LinUCB, LinTS, EpsilonGreedy, KernelUCB, KernelTS.

A policy of this family keeps a ridge model per arm (shared contexts) or one shared
model (per-arm contexts) in :class:`~._ridge.RidgeBlocks`, updated in closed form, and
implements only how it scores the arms: an upper bound, a posterior draw, the mean.
"""
