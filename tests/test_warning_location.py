"""Warnings aiograd raises name the user's line, however many aiograd frames lie between."""

import warnings

import aiograd as ag
import aiograd.nn.functional as F


def _where(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    assert caught, "expected a warning"
    return {(w.filename, w.lineno) for w in caught}


def test_warnings_point_at_the_calling_line():
    x = ag.randn(2, 3, 4)
    calls = [
        lambda: F.dropout2d(x, 0.5),  # through the generated operand check
        lambda: ag.meshgrid(ag.arange(3.0), ag.arange(2.0)),
        lambda: F.softmax(x),
        lambda: ag.nn.Softmax()(x),  # through Module.__call__ and forward
        lambda: ag.scatter(ag.zeros(3), 0, ag.tensor([0, 1]), ag.ones(2), reduce="add"),
    ]
    for call in calls:
        line = call.__code__.co_firstlineno
        assert _where(call) == {(__file__, line)}
