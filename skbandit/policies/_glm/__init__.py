"""Generalised linear policies: GLM-UCB, UCB-GLM, LogTS, PHE, ECOLog, Logistic-UCB-1.

A policy of this family refits a logistic (or linear, for LinPHE) model on its history,
kept as groups of identical rows (``LogisticGroupsMixin``, in
``skbandit.policies.base``) or as rows
(:mod:`._logistic_confidence`), by the Newton solver of ``_core._newton``, and
implements its confidence width or its perturbation of the history.
"""
