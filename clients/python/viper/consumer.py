"""The consumer: follows a model through the viper agent; leases give read-only views of a version."""

import mmap
import os
import threading
import time
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from . import _safetensors as st
from ._agent import Connection, log
from .errors import ViperClosedError, ViperNotFoundError, ViperTimeoutError, error_for

Update = namedtuple("Update", "model version previous path bytes latency_ms reused_bytes", defaults=(0,))
Update.__doc__ = """A swap in the agent: the version now serving, the one before, the transport it came by
(inline: inside its announcement; ucx, tcp, file, ...), the bytes moved, the latency from the producer's publish to the swap, and the bytes
copied from the version held instead of moved (the blocks the two versions share)."""


class _Files:
    """Read-only mappings of the agent's files (kept, since the agent reuses its receive buffers) and
    parsed headers of the versions leased lately. The cache forgets a file the agent has removed (a
    replaced buffer, an old copy) when the next file is mapped: the mapping, and the shared memory
    behind it, goes once no lease or array refers to it any more. Thread-safe."""

    KEEP = 4

    def __init__(self):
        self._lock = threading.Lock()
        self._maps = OrderedDict()
        self._headers = OrderedDict()

    def map(self, path):
        with self._lock:
            m = self._maps.get(path)
            if m is not None:
                self._maps.move_to_end(path)
                return m
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), os.fstat(f.fileno()).st_size, access=mmap.ACCESS_READ)
        with self._lock:
            self._maps[path] = m
            gone = [p for p in self._maps if p != path and not os.path.exists(p)]
            while len(self._maps) - len(gone) > self.KEEP:
                gone.append(next(p for p in self._maps if p not in gone))
            for p in gone:
                del self._maps[p]
        return m

    def header(self, key, buffer, offset, source):
        with self._lock:
            h = self._headers.get(key)
        if h is None:
            h = st.parse_header(buffer, offset, source)
            with self._lock:
                self._headers[key] = h
                while len(self._headers) > self.KEEP:
                    self._headers.popitem(last=False)
        return h


_QUIET = []


def _quiet_read_only_buffers():
    """Silences torch's warning that a buffer is not writable: the memory is mapped read-only on purpose
    (the model must not change under a request). Installed once: each change to the warning filters
    (warnings.catch_warnings on every call did one) clears the registry of warnings already shown, and
    the application's own "once"/"default" warnings then printed again on every request."""
    if not _QUIET:
        warnings.filterwarnings("ignore", message="The given buffer is not writable")
        _QUIET.append(True)


class ModelLease(Mapping):
    """A hold on one model version: its tensors cannot change while the lease is open.

    A mapping of tensor name to a read-only numpy array viewing the agent's shared memory (no copy);
    ``torch()`` gives torch views of the same memory. Close it when the request is answered (``with``
    does). The arrays stay readable after close but may then show a newer version: copy what must
    outlive the request. Any thread may read; close once (further calls do nothing).
    """

    def __init__(self, consumer, reply, buffer, header):
        self._consumer = consumer
        self._lease = reply["lease"]
        self.version = reply["version"]
        self.metadata = dict(header.metadata)
        self._buffer = buffer
        self._entries = OrderedDict((e.name, e) for e in header.entries)
        # Tied weights are stored once: a metadata entry maps each second name to the stored one (as
        # safetensors' save_model writes them), and that name reads the same memory.
        self.aliases = {k: v for k, v in self.metadata.items() if k not in self._entries and v in self._entries}
        self._data = header.data_start
        self._closed = False

    def _entry(self, name):
        if self._closed:
            raise ViperClosedError("the lease on %s v%d is closed" % (self._consumer.model, self.version))
        e = self._entries.get(name)
        if e is None and name in self.aliases:
            e = self._entries[self.aliases[name]]
        if e is None:
            raise ViperNotFoundError("model %s v%d has no tensor %r" % (self._consumer.model, self.version, name))
        return e

    def __getitem__(self, name):
        e = self._entry(name)
        dtype = st.NUMPY[e.dtype]
        count = (e.end - e.begin) // dtype.itemsize
        if count == 0:
            a = np.empty(e.shape, dtype)
            a.flags.writeable = False
            return a
        return np.frombuffer(self._buffer, dtype=dtype, count=count, offset=self._data + e.begin).reshape(e.shape)

    def __iter__(self):
        """Every name, the aliases of tied weights after the stored tensors."""
        yield from self._entries
        yield from self.aliases

    def __len__(self):
        return len(self._entries) + len(self.aliases)

    def dtype(self, name):
        """The safetensors type of tensor ``name`` (``F32``, ``BF16``, ...)."""
        return self._entry(name).dtype

    def torch(self, name=None):
        """Torch views (read-only memory: copy before changing them) of one tensor, or a dict of all."""
        import torch
        if name is None:
            views = OrderedDict((n, self.torch(n)) for n in self._entries)
            views.update((alias, views[target]) for alias, target in self.aliases.items())  # tied: one tensor
            return views
        e = self._entry(name)
        dtype = st.torch_dtype(e.dtype)
        if dtype is None:
            raise ViperNotFoundError("this torch has no dtype for %s (tensor %r)" % (e.dtype, name))
        if e.end == e.begin:
            return torch.empty(e.shape, dtype=dtype)
        _quiet_read_only_buffers()
        t = torch.frombuffer(self._buffer, dtype=dtype, count=(e.end - e.begin) // st.ITEMSIZE[e.dtype],
                             offset=self._data + e.begin)
        return t.reshape(e.shape)

    def close(self):
        """Ends the lease: the agent may reuse the version's memory once no lease holds it."""
        if not self._closed:
            self._closed = True
            self._consumer._release(self._lease)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "ModelLease(%s v%d, %d tensors%s)" % (self._consumer.model, self.version, len(self._entries),
                                                     ", closed" if self._closed else "")


def _tell(listeners, value):
    """Calls every listener with ``value``; one that raises is logged and does not keep it from the others."""
    for listener in listeners:
        try:
            listener(value)
        except Exception:
            log.exception("viper: an update or failure listener failed")


class Consumer:
    """Follows ``model`` through the viper agent, which pulls every newer version in the background,
    verifies it and swaps it in; this client leases the version serving (``current()``).

    ``on_update(fn)`` registers a function called with an :class:`Update` after every swap, on the
    client's reader thread (it must not block for long). If the agent stops following the model for
    a reason trying again cannot change (the broker or the producers refused its credentials or TLS
    trust), no newer version comes: ``wait_version`` raises why, as does ``current()`` before any
    version arrived, and ``on_failure(fn)`` functions are called with that error once. All methods
    are thread-safe: inference threads call ``current()`` per request. ``agent`` is the agent's
    socket (default: see ``default_socket``).
    """

    def __init__(self, model, agent=None):
        self.model = model
        self._cond = threading.Condition()
        self._listeners = []
        self._failure_listeners = []
        self._failure = None  # (reason, message) once the agent cannot follow the model
        self._files = _Files()
        self._version = 0  # updates may arrive before the hello reply: both raise it
        self._conn = Connection(agent, "consumer", model, on_event=self._on_event)
        with self._cond:
            self._version = max(self._version, self._conn.hello["version"])

    @property
    def version(self):
        """The version serving now (0 before the first)."""
        return self._version

    def current(self):
        """A lease on the version serving now; raises ViperNotFoundError before the first one arrived
        (the agent's error instead when it cannot follow the model, so that none will)."""
        reply = self._conn.request("lease")
        try:
            buffer = self._files.map(reply["path"])
            source = "%s (lease on %s v%d)" % (reply["path"], self.model, reply["version"])
            header = self._files.header((reply["path"], reply["offset"], reply["version"]), buffer, reply["offset"], source)
        except BaseException:
            self._release(reply["lease"])
            raise
        return ModelLease(self, reply, buffer, header)

    def _release(self, lease):
        if not self._conn.closed:
            self._conn.send("release", lease=lease)

    def on_update(self, listener):
        """Calls ``listener(update)`` after every swap from now on."""
        with self._cond:
            self._listeners.append(listener)
        return listener

    def on_failure(self, listener):
        """Calls ``listener(error)`` once when the agent stops following the model (at once if it did)."""
        with self._cond:
            failure = self._failure
            if failure is None:
                self._failure_listeners.append(listener)
                return listener
        listener(error_for(*failure))
        return listener

    def wait_version(self, version, timeout=None):
        """Blocks until ``version`` or a newer one serves; returns the version serving.

        Raises ViperTimeoutError when it did not arrive within ``timeout`` seconds (None: no limit),
        and the agent's error (a ViperConfigError naming the peer and why) when it cannot follow the
        model any more, so that the version will not come.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._version < version:
                if self._failure is not None:
                    raise error_for(*self._failure)
                if self._conn.closed:
                    self._conn.submit("ping")  # raises why the connection is gone
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise ViperTimeoutError("model %s: version %d did not arrive within %.3g s (serving %d)"
                                            % (self.model, version, timeout, self._version))
                self._cond.wait(left if left is not None else 1.0)
            return self._version

    def _on_event(self, event):
        if event.get("event") == "failure":
            self._on_failure(event)
            return
        if event.get("event") != "update":
            return
        update = Update(event["model"], event["version"], event["previous"], event["path"], event["bytes"], event["latency_ms"],
                        event.get("reused_bytes", 0))
        with self._cond:
            self._version = max(self._version, update.version)
            listeners = list(self._listeners)
            self._cond.notify_all()
        _tell(listeners, update)

    def _on_failure(self, event):
        with self._cond:
            if self._failure is not None:
                return
            self._failure = (event.get("reason"), event.get("message", "the agent cannot follow model %s" % self.model))
            listeners = list(self._failure_listeners)
            self._cond.notify_all()
        _tell(listeners, error_for(*self._failure))

    def close(self):
        """Stops following the model (the agent's consumer closes when its last client leaves)."""
        self._conn.close()
        with self._cond:
            self._cond.notify_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
