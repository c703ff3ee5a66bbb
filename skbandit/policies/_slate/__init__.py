"""Combinatorial neural slate policies: CN-UCB and CN-TS.

A policy of this family chooses ``slate_size`` distinct arms per round through an
oracle (top-K, position-based, cascade) and learns a network from semi-bandit
feedback. It puts ``SlatePolicyMixin`` (``skbandit.policies.base``: the slate
verbs, shared with the linear family's CombLinUCB and CombLinTS) leftmost over the
neural policy base and implements the per-arm scores the oracle ranks.
"""
