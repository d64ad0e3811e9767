"""The reduction family: ops that run along a dim and reduce, scan or order it.

``reduce``: sum, mean, prod, max/min, var/std, norm, logsumexp, all/any...; ``scan``: cumsum,
cumprod, logcumsumexp, cummax/cummin; ``sorting``: sort, argsort, topk, kthvalue, median, mode,
quantile (with ``_tie_order``: which of equal elements torch's kernels pick, NOTE [Ties]).

The package imports none of its modules: aiograd.ops imports each (their imports of one
another cross families, so a package that imported its modules would close import circles).
"""
