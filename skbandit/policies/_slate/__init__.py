"""Slate policies: CombLinUCB, CombLinTS, CN-UCB and CN-TS.

A policy of this family chooses ``slate_size`` distinct arms per round through an
oracle (top-K, position-based, cascade) and learns from semi-bandit feedback. It puts
:class:`~._base.SlatePolicyMixin` leftmost over a single-arm model (ridge blocks or a
network) and implements the per-arm scores the oracle ranks.
"""
