"""The producer: the hook in a Python training loop, publishing through the viper agent."""

import math
import mmap
import os
import time
from collections.abc import Mapping

import numpy as np

from . import _safetensors as st
from ._agent import Connection
from .errors import ViperClosedError, ViperConfigError, ViperNotFoundError
from .policy import every

class _Reply:
    """The agent's reply to one publish, and whether its refusal has been raised to the caller yet."""

    def __init__(self, future):
        self.future = future
        self.reported = False

    def done(self):
        return self.future.done()

    def refusal(self):
        """The agent's refusal of this publish (waiting for the reply), or None."""
        return self.future.exception()

    def result(self):
        try:
            return self.future.result()
        except Exception:
            self.reported = True
            raise


class Published:
    """One publish. ``stall_s`` is the training stall it cost (seconds). ``version`` is the version the
    agent assigned it: reading it waits for the agent's reply, which comes once the agent has copied
    the slot, and raises the agent's refusal if it refused this publish; ``copied_bytes`` and
    ``unchanged_bytes`` say how much of the checkpoint the agent had to copy and hash. A refusal is raised once: by
    ``version`` or by the producer's next call, whichever comes first. The version is not guessed on
    this side, because a refused publish before this one takes no version. ``written_bytes`` is what
    the trainer copied into the shared memory: every tensor byte, or with ``changed`` only the ranges
    declared since the image the reused slot held."""

    __slots__ = ("stall_s", "written_bytes", "_reply")

    def __init__(self, reply, stall_s, written_bytes):
        self._reply = reply
        self.stall_s = stall_s
        self.written_bytes = written_bytes

    @property
    def version(self):
        return self._reply.result()["version"]

    @property
    def copied_bytes(self):
        """Bytes the agent copied into its staging and hashed (waits like ``version``)."""
        return self._reply.result().get("copied_bytes", -1)

    @property
    def unchanged_bytes(self):
        """Bytes the agent found unchanged in the version its recycled staging held: neither copied nor
        hashed again (waits like ``version``; -1 from an agent that does not say)."""
        return self._reply.result().get("unchanged_bytes", -1)

    def done(self):
        """Whether the agent has replied (``version`` no longer waits)."""
        return self._reply.done()

    def __repr__(self):
        shown = self._reply.future.result()["version"] if self.done() and self._reply.refusal() is None else "pending"
        return "Published(version=%s, stall_s=%.6f)" % (shown, self.stall_s)


class _Slot:
    """A shared-memory file the agent allocated for this producer, mapped read-write here."""

    def __init__(self, reply):
        self.id = reply["slot"]
        self.path = reply["path"]
        self.size = reply["bytes"]
        with open(self.path, "r+b") as f:
            self.map = mmap.mmap(f.fileno(), self.size)
        self.ack = None  # Future of the publish that reads this slot, until it is acknowledged
        self.held = None  # (publish number, layout) of the image it holds, or None when unknown

    def close(self):
        try:
            self.map.close()
        except BufferError:
            pass  # a view of it is still alive somewhere; it is unmapped when that goes


def _describe(name, value):
    """(dtype, shape, nbytes, copy, copy_range) for a torch tensor or anything numpy takes: copy(buffer,
    offset) writes it whole at ``offset``, copy_range(buffer, offset, start, end) only its bytes
    [start, end) (little-endian, as in the image) at ``offset + start``."""
    nested = ("tensor %r is a %s, not a tensor: publish a flat mapping of name to tensor (an "
              "optimizer.state_dict() nests its state per parameter: flatten it, e.g. 'state.0.exp_avg')")
    if isinstance(value, Mapping):
        raise ViperConfigError(nested % (name, type(value).__name__))
    if type(value).__module__.startswith("torch"):
        import torch
        t = value.detach()
        if t.device.type == "meta":
            raise ViperConfigError("tensor %r is on the meta device: it has a shape but no data to publish "
                                   "(materialize the module first, e.g. module.to_empty(device='cpu'))" % name)
        if t.layout != torch.strided:
            raise ViperConfigError("tensor %r has layout %s: only dense tensors can be published "
                                   "(call .to_dense() on it)" % (name, t.layout))
        dtype = st.torch_dtypes().get(t.dtype)
        if dtype is None:
            raise ViperConfigError("tensor %r: dtype %s has no safetensors type" % (name, t.dtype))
        nbytes = t.numel() * t.element_size()

        def copy(buffer, offset):
            if nbytes:
                # Straight from the tensor's memory (or its GPU) into the shared memory: one copy.
                torch.frombuffer(buffer, dtype=torch.uint8, count=nbytes, offset=offset).view(t.dtype).view(t.shape).copy_(t)

        flat = []  # the tensor's bytes (on its device), made once: a strided tensor is copied to make them

        def copy_range(buffer, offset, start, end):
            if end > start:
                if not flat:
                    flat.append(t.contiguous().view(-1).view(torch.uint8))
                torch.frombuffer(buffer, dtype=torch.uint8, count=end - start, offset=offset + start).copy_(flat[0][start:end])
        return dtype, tuple(t.shape), nbytes, copy, copy_range
    try:
        a = np.asarray(value)
    except ValueError:  # a ragged list: numbers nested unevenly, or other objects
        raise ViperConfigError(nested % (name, type(value).__name__)) from None
    if a.dtype == object and isinstance(value, (list, tuple)):
        raise ViperConfigError(nested % (name, type(value).__name__))  # a list of dicts (param_groups)
    dtype = st.dtype_of_numpy(a.dtype)
    if dtype is None:
        raise ViperConfigError("tensor %r: numpy dtype %s has no safetensors type" % (name, a.dtype))

    def copy(buffer, offset):
        if a.nbytes:
            dst = np.frombuffer(buffer, dtype=st.NUMPY[dtype], count=a.size, offset=offset).reshape(a.shape)
            np.copyto(dst, a, casting="equiv")  # equiv: same type, any byte order

    raw = []  # the little-endian bytes, made once: a copy only where a is strided or big-endian

    def copy_range(buffer, offset, start, end):
        if end > start:
            if not raw:
                raw.append(np.ascontiguousarray(a, dtype=st.NUMPY[dtype]).reshape(-1).view(np.uint8))
            np.frombuffer(buffer, dtype=np.uint8, count=end - start, offset=offset + start)[:] = raw[0][start:end]
    return dtype, a.shape, a.nbytes, copy, copy_range


def _tie_key(value):
    """What makes two values the same tensor: same memory, element type, shape and strides; None where
    that cannot be told (anything but a torch tensor or a numpy array) or the tensor is empty."""
    if type(value).__module__.startswith("torch"):
        import torch
        t = value.detach()
        if t.numel() == 0 or t.device.type == "meta" or t.layout != torch.strided:
            return None
        storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return ("torch", str(t.device), storage.data_ptr(), t.storage_offset(), t.dtype, tuple(t.shape), t.stride())
    if isinstance(value, np.ndarray) and value.size:
        return ("numpy", value.__array_interface__["data"][0], value.dtype.str, value.shape, value.strides)
    return None


def _ties(tensors):
    """Tied weights: {alias: first name} for each name whose tensor is the same memory, dtype, shape
    and strides as one named before it (``head.weight = tok.weight`` in torch). The first name is stored
    and the others map to it in the metadata, as safetensors' save_model writes them."""
    first = {}
    aliases = {}
    for name, value in tensors.items():
        key = _tie_key(value)
        if key is None:
            continue
        if key in first:
            aliases[name] = first[key]
        else:
            first[key] = name
    return aliases


def _changes_on_stored(changed, aliases):
    """``changed`` with the ranges declared for an alias moved to the tensor stored under its first name."""
    out = {}
    for name, ranges in changed.items():
        target = aliases.get(name, name)
        if target in out and (out[target] is None or ranges is None):
            out[target] = None
        elif target in out:
            out[target] = list(out[target]) + list(ranges)
        else:
            out[target] = ranges
    return out


def _wire_number(x):
    """``x`` as the protocol carries it: a JSON number, or for a non-finite one the string Java writes
    ("NaN", "Infinity", "-Infinity"), since JSON has no token for them."""
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _merge(bounds):
    """[start, end, start, end, ...] sorted and merged into a list of (start, end)."""
    pairs = sorted((bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2) if bounds[i + 1] > bounds[i])
    out = []
    for start, end in pairs:
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


class Producer:
    """Publishes model versions of ``model`` through the viper agent, from a training loop.

    ``step(iteration, loss, state_dict)`` asks ``policy`` whether the iteration publishes (the same
    semantics as Java's ``ViperProducer.step``: iterations must increase; ``every(n)`` publishes
    iterations n, 2n, ...). When it does, the tensors are copied into shared memory the agent
    allocated (with ``changed``, often only what changed): that copy is the only stall training
    sees. The agent then copies them into its
    staging, hashes, announces and serves them while training goes on. A publish the agent refuses
    is raised by the next ``step``, ``publish`` or ``flush``.

    Tensors may be torch tensors (CPU or GPU; bfloat16 and float8 too) or numpy arrays; a
    ``state_dict`` is a mapping of name to tensor, or a callable returning one (called only when the
    iteration publishes). Tied weights (two names of one tensor: the same memory, dtype, shape and
    strides, as ``head.weight = tok.weight`` makes them) are stored once: the second name becomes a
    metadata entry naming the first, as safetensors' ``save_model`` writes them, and a consumer's
    lease gives the same memory under both names.

    One training thread calls a producer; the agent keeps serving the published versions after it
    closes, until the agent stops. ``agent`` is the agent's socket (default: see ``default_socket``).
    """

    SLOTS = 2  # fill one while the agent copies the other

    def __init__(self, model, policy=None, agent=None):
        self.model = model
        self.policy = policy if policy is not None else every(1)
        self._conn = Connection(agent, "producer", model)
        self._version = self._conn.hello["version"]
        self._slots = []
        self._last_iteration = None
        self._published = False  # whether the last publish call reached the agent: the next one's changes are relative to it
        self._publishes = 0  # publish calls that got as far as writing a slot
        self._declared = {}  # publish number -> (layout, its changes as sent: {name: [start, end, ...]} or None), the last few
        self._closed = False

    @property
    def version(self):
        """The newest version published through this producer (the agent's newest when it started)."""
        return self._version

    def step(self, iteration, loss, state_dict, changed=None):
        """Reports ``iteration`` with training ``loss``; publishes ``state_dict`` when the policy says so.

        ``changed`` (a mapping, or a callable returning one, called only when the iteration publishes)
        says what changed since the last publish, as for :meth:`publish`. Returns a
        :class:`Published` when it published, else None. A NaN or infinite loss publishes like any
        other (the version's ``viper.loss`` reads ``NaN``, ``Infinity`` or ``-Infinity``).
        """
        self._check_open()
        if not isinstance(iteration, int) or isinstance(iteration, bool):
            raise ViperConfigError("producer %s: iteration must be an integer, got %r" % (self.model, iteration))
        if self._last_iteration is not None and iteration <= self._last_iteration:
            raise ViperConfigError("producer %s: iteration %d does not follow %d" % (self.model, iteration, self._last_iteration))
        try:
            loss = float(loss)
        except (TypeError, ValueError):
            raise ViperConfigError("producer %s: loss must be a number, got %r" % (self.model, loss)) from None
        self._last_iteration = iteration
        if not self.policy(iteration, loss):
            return None
        tensors = state_dict() if callable(state_dict) else state_dict
        changes = changed() if callable(changed) else changed
        return self._publish(tensors, None, iteration, loss, changes)

    def publish(self, tensors, metadata=None, changed=None):
        """Publishes ``tensors`` (a mapping of name to tensor) now, as the next version.

        ``changed``, when given, is the training code's word on what changed since this producer's
        last publish: a mapping of tensor name to the byte ranges that may differ, a list of
        ``(offset, length)`` pairs (``None``: the whole tensor); a tensor it does not name is
        unchanged. The agent then copies and hashes only those ranges into a staging buffer that
        holds an older version, instead of comparing every byte with it. A byte changed outside
        ``changed`` is not looked for (the version keeps its old value, or carries the new one under
        the old hash, and consumers refuse that version). Without ``changed`` the agent
        finds what changed by comparing; so it does on a producer's first publish, which has no last one.
        """
        self._check_open()
        return self._publish(tensors, metadata, None, None, changed)

    def _changes(self, described, changed):
        """The publish request's ``changes`` field: per tensor ``[start, end, ...]`` byte bounds."""
        sizes = {name: nbytes for name, _, _, nbytes, _, _ in described}
        unknown = [name for name in changed if name not in sizes]
        if unknown:
            raise ViperConfigError("producer %s: changed names %r, which is not among the published tensors" % (self.model, unknown[0]))
        out = {name: [] for name in sizes}
        for name, ranges in changed.items():
            size = sizes[name]
            if ranges is None:
                out[name] = [0, size]
                continue
            bounds = []
            for r in ranges:
                try:
                    offset, length = r
                except (TypeError, ValueError):
                    raise ViperConfigError("producer %s: changed[%r] must hold (offset, length) pairs, got %r" % (self.model, name, r)) from None
                if not all(isinstance(x, int) and not isinstance(x, bool) for x in (offset, length)) \
                        or offset < 0 or length < 0 or offset + length > size:
                    raise ViperConfigError("producer %s: changed[%r]: (%r, %r) is not a range of its %d bytes" % (self.model, name, offset, length, size))
                bounds += [offset, offset + length]
            out[name] = bounds
        return out

    def _publish(self, tensors, metadata, iteration, loss, changed):
        t0 = time.perf_counter()
        if not isinstance(tensors, Mapping):
            raise ViperConfigError("producer %s: tensors must be a mapping of name to tensor, got %s" % (self.model, type(tensors).__name__))
        if metadata is not None and not isinstance(metadata, Mapping):
            raise ViperConfigError("producer %s: metadata must be a mapping of str to str, got %s" % (self.model, type(metadata).__name__))
        # Changes are relative to the last publish: a first one has none (the agent's last may be another
        # process's), and after a call that failed here, which took changes the agent never saw, the next
        # one's would miss them. Either way this publish is not declared.
        relative = self._published
        self._published = False  # until this publish reaches the agent
        aliases = _ties(tensors)
        if aliases:
            taken = [a for a in aliases if metadata and a in metadata]
            if taken:
                raise ViperConfigError("producer %s: tensor %r is tied to %r (stored once, its name an alias in the "
                                       "metadata), but the metadata has an entry %r" % (self.model, taken[0], aliases[taken[0]], taken[0]))
            metadata = dict(metadata or {}, **aliases)
            if changed is not None:
                changed = _changes_on_stored(changed, aliases)
        described = [(name,) + _describe(name, value) for name, value in tensors.items() if name not in aliases]
        declared = self._changes(described, changed) if changed is not None else None
        changes = declared if relative else None
        header = st.encode_header([(n, d, s, b) for n, d, s, b, _, _ in described], metadata)
        total = len(header) + sum(b for _, _, _, b, _, _ in described)
        slot = self._free_slot(total)
        self._publishes += 1
        number = self._publishes
        layout = (len(header), tuple((n, d, tuple(s), b) for n, d, s, b, _, _ in described))
        ranges = self._ranges_to_write(slot, layout, number, changes)
        slot.held = None  # until this image is whole in it
        slot.map[0:len(header)] = header
        offset = len(header)
        written = 0
        for name, _, _, nbytes, copy, copy_range in described:
            if ranges is None:
                copy(slot.map, offset)
                written += nbytes
            else:
                for start, end in ranges[name]:
                    copy_range(slot.map, offset, start, end)
                    written += end - start
            offset += nbytes
        fields = {"slot": slot.id, "bytes": total}
        if changes is not None:
            fields["changes"] = changes
        if iteration is not None:
            fields.update(iteration=iteration, loss=_wire_number(loss))
        slot.ack = _Reply(self._conn.submit("publish", **fields))
        slot.held = (number, layout)
        self._declared[number] = (layout, changes)
        self._declared.pop(number - 2 * self.SLOTS - 8, None)
        self._published = True
        stall = time.perf_counter() - t0
        self._version += 1
        return Published(slot.ack, stall, written)

    def _ranges_to_write(self, slot, layout, number, changes):
        """Per tensor the (start, end) byte ranges to write into ``slot`` for publish ``number``, the union
        of what every publish since the one the slot holds declared; None: write everything (the slot
        holds nothing known or another layout, or a publish in between had another layout or did not declare)."""
        if changes is None or slot.held is None or slot.held[1] != layout:
            return None
        union = {name: list(bounds) for name, bounds in changes.items()}
        for n in range(slot.held[0] + 1, number):
            before_layout, before = self._declared.get(n, (None, None))
            if before is None or before_layout != layout:
                return None
            for name, bounds in before.items():
                union[name] += bounds
        return {name: _merge(bounds) for name, bounds in union.items()}

    def _free_slot(self, size):
        """A slot of at least ``size`` bytes no publish reads, waiting for the agent if need be."""
        while True:
            self._collect(wait=False)
            for s in self._slots:
                if s.ack is None and s.size >= size:
                    return s
            idle = [s for s in self._slots if s.ack is None]
            if len(self._slots) < self.SLOTS or idle:
                if len(self._slots) >= self.SLOTS:
                    self._free(idle[0])  # too small for this checkpoint
                return self._new_slot(size)
            self._collect(wait=True)

    def _new_slot(self, size):
        reply = self._conn.request("alloc", bytes=size)
        try:
            slot = _Slot(reply)
        except FileNotFoundError:
            # Deleted between the agent's alloc and this open: the agent drops it (and logs it); ask once more.
            self._conn.request("free", slot=reply["slot"])
            reply = self._conn.request("alloc", bytes=size)
            try:
                slot = _Slot(reply)
            except FileNotFoundError:
                self._conn.request("free", slot=reply["slot"])
                raise ViperNotFoundError("shared-memory file %s vanished before it could be mapped twice in a row; "
                                         "is something cleaning %s?" % (reply["path"], os.path.dirname(reply["path"]))) from None
        self._slots.append(slot)
        return slot

    def _free(self, slot):
        self._slots.remove(slot)
        slot.close()
        self._conn.request("free", slot=slot.id)

    def _collect(self, wait):
        """Takes the agent's acknowledgements: frees acknowledged slots, raises the first refusal."""
        pending = [s for s in self._slots if s.ack is not None]
        if wait and pending:
            pending[0].ack.refusal()  # blocks until the oldest is acknowledged
        error = None
        for s in pending:
            if not s.ack.done():
                continue
            ack, s.ack = s.ack, None
            if ack.refusal() is not None:
                self._version -= 1  # the refused publish took no version
                if not ack.reported:
                    error = error or ack.refusal()
            elif ack.future.result().get("slot_retired"):
                self._slots.remove(s)  # its file was deleted: the agent published from its own mapping
                s.close()
        if error is not None:
            raise error

    def flush(self, timeout=None):
        """Waits until every publish so far is announced (and durable with a PFS); returns the newest version.
        Raises ViperTimeoutError when the agent did not answer within ``timeout`` seconds (None: no limit)."""
        self._check_open()
        while any(s.ack is not None for s in self._slots):
            self._collect(wait=True)
        self._version = self._conn.request("flush", timeout=timeout)["version"]
        return self._version

    def _check_open(self):
        if self._closed:
            raise ViperClosedError("producer %s is closed" % self.model)

    def close(self):
        """Waits for the agent to take what was published, then disconnects. The agent keeps serving it."""
        if self._closed:
            return
        try:
            while any(s.ack is not None for s in self._slots) and not self._conn.closed:
                self._collect(wait=True)
        finally:
            self._closed = True
            for s in self._slots:
                s.close()
            self._slots = []
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
