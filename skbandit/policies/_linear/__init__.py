"""Linear and kernel ridge policies: LinUCB, LinTS, EpsilonGreedy, KernelUCB, KernelTS,
and their slate versions CombLinUCB and CombLinTS.

A policy of this family keeps a ridge model per arm (shared contexts) or one shared
model (per-arm contexts) in ridge blocks updated in closed form (its base
``LinearPolicyMixin``, or ``KernelPolicyMixin`` for the kernel policies, both in
``skbandit.policies.base``), and implements only how it scores the arms: an upper
bound, a posterior draw, the mean. CombLinUCB
and CombLinTS put ``SlatePolicyMixin`` over LinUCB and LinTS: an oracle turns the
scores into a slate.
"""
