"""The connection to a viper agent: framing, hello, requests and events (docs/agent-protocol.md).

A frame is a 4-byte big-endian length, then that many bytes of one UTF-8 JSON object. Each
connection has a reader thread: replies complete the request of the same id, events go to the
handler given (on that thread).
"""

import json
import logging
import os
import platform
import socket
import struct
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from .errors import RetriableViperError, ViperClosedError, ViperConfigError, ViperFormatError, ViperTimeoutError, error_for

PROTOCOL = 1
MAX_FRAME_BYTES = 1 << 20
SOCKET_ENV = "VIPER_AGENT_SOCKET"

log = logging.getLogger("viper")


def default_socket():
    """$VIPER_AGENT_SOCKET, else $XDG_RUNTIME_DIR/viper/agent.sock, else /tmp/viper-<uid>/agent.sock."""
    named = os.environ.get(SOCKET_ENV, "").strip()
    if named:
        return named
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "viper", "agent.sock")
    return "/tmp/viper-%d/agent.sock" % os.getuid()


def _start_hint(path):
    return "start one with: ./viper agent --socket %s (in the Viper repository)" % path


class Connection:
    """One connection to the agent, as a producer or consumer of one model. Thread-safe."""

    def __init__(self, path, role, model, on_event=None):
        self.path = path or default_socket()
        self._on_event = on_event
        self._lock = threading.Lock()  # guards _pending, _next_id, _closed_reason and sending
        self._pending = {}
        self._next_id = 0
        self._closed_reason = None
        if len(os.fsencode(self.path)) > 107:
            raise ViperConfigError("socket path %s is too long for a Unix domain socket (107 bytes at most)" % self.path)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(self.path)
        except FileNotFoundError:
            self._sock.close()
            raise RetriableViperError("no viper agent at %s; %s" % (self.path, _start_hint(self.path)), "UNAVAILABLE") from None
        except ConnectionRefusedError:
            self._sock.close()
            raise RetriableViperError("no viper agent answers at %s (a stale socket?); %s" % (self.path, _start_hint(self.path)),
                                      "UNAVAILABLE") from None
        except PermissionError:
            self._sock.close()
            raise ViperConfigError("cannot connect to the viper agent at %s: permission denied (its socket is owner-only: "
                                   "run the agent as this user)" % self.path) from None
        except OSError as e:
            self._sock.close()
            raise RetriableViperError("cannot connect to the viper agent at %s: %s; %s" % (self.path, e.strerror, _start_hint(self.path)),
                                      "UNAVAILABLE") from None
        self._reader = threading.Thread(target=self._read_loop, name="viper-agent-reader", daemon=True)
        self._reader.start()
        client = "python %s pid %d" % (platform.python_version(), os.getpid())
        try:
            self.hello = self.request("hello", protocol=PROTOCOL, role=role, model=model, client=client)
        except BaseException:
            self.close()
            raise

    def submit(self, op, **fields):
        """Sends a request; returns a Future of its reply (a dict), failed with a ViperError when refused."""
        future = Future()
        with self._lock:
            if self._closed_reason is not None:
                raise self._closed_error()
            self._next_id += 1
            fields["op"] = op
            fields["id"] = self._next_id
            self._pending[self._next_id] = future
            self._send_locked(fields)
        return future

    def request(self, op, timeout=None, **fields):
        """Sends a request and waits for its reply, at most ``timeout`` seconds (None: no limit);
        raises ViperTimeoutError when it did not come in time."""
        try:
            return self.submit(op, **fields).result(timeout)
        except FutureTimeout:
            # Before Python 3.11 the futures' TimeoutError is not the builtin one: callers catch Viper's types.
            raise ViperTimeoutError("viper agent at %s: no reply to %s within %.3g s" % (self.path, op, timeout)) from None

    def send(self, op, **fields):
        """Sends a request that wants no reply (a release)."""
        with self._lock:
            if self._closed_reason is not None:
                raise self._closed_error()
            fields["op"] = op
            self._send_locked(fields)

    def _send_locked(self, message):
        try:
            # Strict JSON: a bare NaN or Infinity is not JSON, and other clients' parsers refuse it.
            body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except ValueError as e:
            self._pending.pop(message.get("id"), None)
            raise ViperConfigError("%s: cannot be sent to the viper agent (%s)" % (message.get("op"), e)) from None
        try:
            self._sock.sendall(struct.pack(">I", len(body)) + body)
        except OSError as e:
            self._fail("the viper agent at %s went away (%s)" % (self.path, e.strerror or e))
            raise self._closed_error() from None

    def _read_loop(self):
        try:
            while True:
                message = self._read_frame()
                if message is None:
                    self._fail("the viper agent at %s closed the connection" % self.path)
                    return
                if "event" in message:
                    if self._on_event is not None:
                        try:
                            self._on_event(message)
                        except Exception:  # a listener's bug must not stop the replies
                            log.exception("viper: an update or failure listener failed")
                    continue
                with self._lock:
                    future = self._pending.pop(message.get("id"), None)
                if future is None:
                    if not message.get("ok", True):
                        log.warning("viper agent: %s", message.get("message"))
                    continue
                if message.get("ok"):
                    future.set_result(message)
                else:
                    future.set_exception(error_for(message.get("reason"), message.get("message", "refused by the agent")))
        except OSError as e:
            self._fail("the connection to the viper agent at %s failed (%s)" % (self.path, e.strerror or e))
        except ViperFormatError as e:
            self._fail(str(e))
        except Exception as e:  # this thread ending without a word would leave every request waiting forever
            log.exception("viper: the reader of the connection to the viper agent at %s failed", self.path)
            self._fail("the connection to the viper agent at %s failed (%s: %s)" % (self.path, type(e).__name__, e))

    def _read_frame(self):
        head = self._read_exactly(4)
        if head is None:
            return None
        (n,) = struct.unpack(">I", head)
        if n == 0 or n > MAX_FRAME_BYTES:
            raise ViperFormatError("viper agent at %s: frame length %d is out of bounds" % (self.path, n))
        body = self._read_exactly(n)
        if body is None:
            return None
        try:
            message = json.loads(body.decode("utf-8"))
        except ValueError as e:  # UnicodeDecodeError is one too
            raise ViperFormatError("viper agent at %s: a frame is not UTF-8 JSON (%s)" % (self.path, e)) from None
        if not isinstance(message, dict):
            raise ViperFormatError("viper agent at %s: a frame is a JSON %s, not an object" % (self.path, type(message).__name__))
        return message

    def _read_exactly(self, n):
        chunks = []
        while n > 0:
            chunk = self._sock.recv(n)
            if not chunk:
                return None
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _fail(self, reason):
        with self._lock:
            if self._closed_reason is None:
                self._closed_reason = reason
            pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed_error())

    def _closed_error(self):
        if self._closed_reason == "closed":
            return ViperClosedError("this connection to the viper agent is closed")
        return RetriableViperError(self._closed_reason, "UNAVAILABLE")

    @property
    def closed(self):
        return self._closed_reason is not None

    def close(self):
        """Closes the connection; requests still waiting fail. Idempotent."""
        with self._lock:
            if self._closed_reason is None:
                self._closed_reason = "closed"
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        if self._reader is not threading.current_thread():
            self._reader.join(5)
        self._fail("closed")
