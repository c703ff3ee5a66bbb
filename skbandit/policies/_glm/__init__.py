"""Generalised linear policies: GLM-UCB, UCB-GLM, LogTS, PHE, ECOLog, Logistic-UCB-1.

A policy of this family refits a logistic (or linear, for LinPHE) model on its history,
kept as groups of identical rows (:mod:`._grouped_rows`) or as rows
(:mod:`._logistic_confidence`), by the Newton solver of :mod:`._newton`, and implements
its confidence width or its perturbation of the history.
"""
