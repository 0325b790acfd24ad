"""Viper's Python client: publish models from a training loop and lease them in an inference server,
through the viper agent (``./viper agent``), a local sidecar that owns Viper's transports, notifier
and PFS. Model bytes never cross the agent's socket: they lie in shared memory.

Producer::

    p = viper.Producer("nt3", policy=viper.every(100))
    for it in range(1, iterations + 1):
        loss = train_step()
        p.step(it, loss, model.state_dict)   # copies into shared memory only when the policy publishes
    p.flush()

Consumer::

    c = viper.Consumer("nt3")
    c.wait_version(1, timeout=60)
    with c.current() as model:               # this version cannot change under the request
        w = model["fc.weight"]               # read-only numpy array; model.torch("fc.weight") for torch
"""

from ._agent import PROTOCOL, default_socket
from .consumer import Consumer, ModelLease, Update
from .errors import (RetriableViperError, ViperClosedError, ViperConfigError, ViperCorruptDataError, ViperError,
                     ViperFormatError, ViperNotFoundError, ViperTimeoutError, ViperUnsupportedError)
from .policy import at_iterations, every, never
from .producer import Producer, Published

__version__ = "0.1.0"

__all__ = [
    "Producer", "Published", "Consumer", "ModelLease", "Update", "every", "at_iterations", "never", "default_socket",
    "PROTOCOL", "ViperError", "RetriableViperError", "ViperFormatError", "ViperConfigError", "ViperNotFoundError",
    "ViperUnsupportedError", "ViperClosedError", "ViperTimeoutError", "ViperCorruptDataError",
]
