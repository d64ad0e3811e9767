"""The indexing family: ops that read or write elements chosen by indices, and that find them.

``index``: reads (``__getitem__``, narrow, select, gather, index_select, masked_select, take) and
index_put, their adjoint write (NOTE [Index adjoint pair]); ``scatter``: the other indexed
writes (scatter, scatter_add/reduce, index_add/copy/fill, masked_fill/scatter); ``search``:
ops whose results are positions (nonzero, argwhere, searchsorted, bucketize, unique).

The package imports none of its modules: aiograd.ops imports each (their imports of one
another cross families, so a package that imported its modules would close import circles).
"""
