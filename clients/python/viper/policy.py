"""Checkpoint policies: whether an iteration publishes. The same semantics as Java's ``CheckpointPolicy``.

A policy is any callable ``policy(iteration, loss) -> bool``; the producer calls it once per
:meth:`~viper.Producer.step`, on the training thread, with increasing iterations.
"""

import operator

from .errors import ViperConfigError


def _is_integer(value):
    """Whether ``value`` is an integer (numpy's too), not a bool, a float or a string that int() would take."""
    if isinstance(value, bool):
        return False
    try:
        operator.index(value)
        return True
    except TypeError:
        return False


class every:
    """Publishes every ``n``-th iteration: iterations n, 2n, 3n, ... (as Java's ``every(n)``)."""

    def __init__(self, n):
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ViperConfigError("every(n): n must be a positive integer, got %r" % (n,))
        self.n = n

    def __call__(self, iteration, loss):
        return iteration > 0 and iteration % self.n == 0

    def __repr__(self):
        return "every(%d)" % self.n


class at_iterations:
    """Publishes exactly at the given iterations (as Java's ``atIterations``)."""

    def __init__(self, *iterations):
        for i in iterations:
            if not _is_integer(i):
                raise ViperConfigError("at_iterations: iterations must be integers, got %r" % (i,))
        self.iterations = frozenset(int(i) for i in iterations)

    def __call__(self, iteration, loss):
        return iteration in self.iterations

    def __repr__(self):
        shown = sorted(self.iterations)
        return "at_iterations%r" % (tuple(shown),) if len(shown) <= 8 else "at_iterations(%d iterations)" % len(shown)


class never:
    """Never publishes from ``step``; explicit ``publish`` calls still do (as Java's ``never()``)."""

    def __call__(self, iteration, loss):
        return False

    def __repr__(self):
        return "never()"
