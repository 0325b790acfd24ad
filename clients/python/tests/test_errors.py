"""Errors have the Java SDK's reasons, types and retriability; a missing agent says how to start one."""

import json
import os
import socket
import struct
import tempfile
import threading
import time
import unittest

import numpy as np

import viper
from viper.errors import error_for


class ErrorsTest(unittest.TestCase):
    TABLE = {  # reason: (type, retriable), as in io.viper.errors' package documentation
        "FORMAT": (viper.ViperFormatError, False),
        "CONFIG": (viper.ViperConfigError, False),
        "NOT_FOUND": (viper.ViperNotFoundError, False),
        "UNSUPPORTED": (viper.ViperUnsupportedError, False),
        "CLOSED": (viper.ViperClosedError, False),
        "IO": (viper.ViperError, False),
        "INTERNAL": (viper.ViperError, False),
        "TRANSFER": (viper.RetriableViperError, True),
        "UNAVAILABLE": (viper.RetriableViperError, True),
        "TIMEOUT": (viper.ViperTimeoutError, True),
        "CORRUPT": (viper.ViperCorruptDataError, True),
    }

    def test_the_reason_decides_the_type_and_whether_to_retry(self):
        for reason, (cls, retriable) in self.TABLE.items():
            e = error_for(reason, "m")
            self.assertIs(type(e), cls, reason)
            self.assertEqual(e.reason, reason)
            self.assertEqual(e.retriable, retriable, reason)
            self.assertEqual(isinstance(e, viper.RetriableViperError), retriable, reason)
            self.assertEqual(str(e), "m")

    def test_a_timeout_is_also_a_python_timeout(self):
        self.assertIsInstance(viper.ViperTimeoutError("late"), TimeoutError)

    def test_an_unknown_reason_is_internal(self):
        self.assertEqual(error_for("SOMETHING_NEW", "m").reason, "INTERNAL")

    def test_no_agent_is_one_clear_line_with_the_command_that_starts_one(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            with self.assertRaises(viper.RetriableViperError) as e:
                viper.Consumer("nt3", agent=path)
            self.assertEqual(str(e.exception), "no viper agent at %s; start one with: ./viper agent --socket %s "
                                               "(in the Viper repository)" % (path, path))
            self.assertEqual(e.exception.reason, "UNAVAILABLE")

    def test_a_socket_nobody_answers_on_is_named_stale(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            s = socket.socket(socket.AF_UNIX)
            s.bind(path)
            s.close()  # the file stays, nobody listens: what a killed agent leaves
            with self.assertRaises(viper.RetriableViperError) as e:
                viper.Producer("nt3", agent=path)
            self.assertIn("no viper agent answers at %s (a stale socket?)" % path, str(e.exception))

    def test_an_agent_that_cannot_follow_the_model_says_why(self):
        # its clients saw NOT_FOUND, and wait_version timed out, until they gave up
        why = "this agent cannot follow model nt3: notifier embedded://h:1: embedded://h:1 requires credentials: set viper.auth.secret.file"
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")

            def agent(conn):  # tells of the failure, and refuses the lease with it, as viper agent does
                _send(conn, {"event": "failure", "model": "nt3", "reason": "CONFIG", "message": why})
                lease = _read(conn)
                _send(conn, {"id": lease["id"], "ok": False, "reason": "CONFIG", "message": why})

            server = _fake_agent(path, d, agent)
            with viper.Consumer("nt3", agent=path) as c:
                with self.assertRaises(viper.ViperConfigError) as waited:
                    c.wait_version(1, timeout=60)
                self.assertEqual(str(waited.exception), why)
                heard = []
                c.on_failure(heard.append)
                self.assertEqual([why], [str(e) for e in heard], "a listener registered later hears it at once")
                with self.assertRaises(viper.ViperConfigError) as leased:
                    c.current()
                self.assertEqual(str(leased.exception), why)
            server.close()

    def test_a_frame_that_is_not_a_json_object_fails_the_request_waiting_for_it(self):
        for body in (b"{not json", b"\xff\xfe", b"[1, 2]"):
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "agent.sock")

                def reply_badly(conn):
                    _read(conn)  # the lease request
                    conn.sendall(struct.pack(">I", len(body)) + body)

                server = _fake_agent(path, d, reply_badly)
                with viper.Consumer("nt3", agent=path) as c:
                    leased = _in_thread(c.current)
                    self.assertIsInstance(leased, viper.RetriableViperError, body)
                    self.assertIn("viper agent at %s: a frame is" % path, str(leased))
                server.close()

    def test_a_reply_that_does_not_come_in_time_is_a_viper_timeout(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            server = _fake_agent(path, d, lambda conn: None)  # never answers the flush
            with viper.Producer("nt3", agent=path) as p:
                with self.assertRaises(viper.ViperTimeoutError) as e:
                    p.flush(timeout=0.2)
                self.assertEqual(str(e.exception), "viper agent at %s: no reply to flush within 0.2 s" % path)
            server.close()

    def test_a_listener_that_raises_does_not_keep_the_update_from_the_others(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            registered = threading.Event()

            def agent(conn):
                registered.wait(10)
                _send(conn, {"event": "update", "model": "nt3", "version": 1, "previous": 0, "path": "tcp", "bytes": 8,
                             "latency_ms": 1.0})

            server = _fake_agent(path, d, agent)
            with viper.Consumer("nt3", agent=path) as c:
                heard = []
                c.on_update(lambda u: 1 / 0)
                c.on_update(lambda u: heard.append(u.version))
                with self.assertLogs("viper", "ERROR"):
                    registered.set()
                    c.wait_version(1, timeout=10)
                    deadline = time.monotonic() + 10
                    while not heard and time.monotonic() < deadline:
                        time.sleep(0.01)
                self.assertEqual(heard, [1])
            server.close()

    def test_arguments_a_producer_cannot_publish_are_refused_as_config_errors_before_anything_is_sent(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            server = _fake_agent(path, d, lambda conn: None)  # any request sent would go unanswered
            with viper.Producer("nt3", agent=path, policy=viper.every(1)) as p:
                for call, says in ((lambda: p.step(1, "low", {}), "loss must be a number"),
                                   (lambda: p.publish(None), "tensors must be a mapping"),
                                   (lambda: p.publish({"w": np.ones(2, np.float32)}, metadata=[("k", "v")]), "metadata must be a mapping"),
                                   (lambda: p.publish({"w": np.ones(2, np.float32)}, metadata={"step": 3}), "must be strings"),
                                   (lambda: p.publish({"__metadata__": np.ones(2, np.float32)}), "reserved for the metadata")):
                    refused = _in_thread(call)
                    self.assertIsInstance(refused, viper.ViperConfigError)
                    self.assertIn(says, str(refused))
            server.close()

    def test_a_non_finite_loss_goes_out_as_the_protocol_string_and_bare_nan_never(self):
        from viper.producer import _wire_number
        self.assertEqual([_wire_number(x) for x in (0.5, float("nan"), float("inf"), float("-inf"))],
                         [0.5, "NaN", "Infinity", "-Infinity"])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "agent.sock")
            server = _fake_agent(path, d, lambda conn: None)
            with viper.Producer("nt3", agent=path) as p:
                # A bare NaN is not JSON: other parsers refuse it, so the client refuses it before sending.
                refused = _in_thread(lambda: p._conn.submit("publish", loss=float("nan")))
                self.assertIsInstance(refused, viper.ViperConfigError)
                self.assertIn("publish: cannot be sent to the viper agent", str(refused))
                self.assertFalse(p._conn.closed)
                self.assertEqual(p._conn._pending, {})
            server.close()

    def test_the_default_socket_follows_the_environment(self):
        saved = {k: os.environ.get(k) for k in ("VIPER_AGENT_SOCKET", "XDG_RUNTIME_DIR")}
        try:
            os.environ["VIPER_AGENT_SOCKET"] = "/x/a.sock"
            self.assertEqual(viper.default_socket(), "/x/a.sock")
            del os.environ["VIPER_AGENT_SOCKET"]
            with tempfile.TemporaryDirectory() as d:
                os.environ["XDG_RUNTIME_DIR"] = d
                self.assertEqual(viper.default_socket(), os.path.join(d, "viper", "agent.sock"))
            os.environ.pop("XDG_RUNTIME_DIR")
            self.assertEqual(viper.default_socket(), "/tmp/viper-%d/agent.sock" % os.getuid())
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _fake_agent(path, shm_dir, script):
    """Listens at ``path`` as an agent: says hello to one client, runs ``script(conn)``, then reads until it leaves."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)

    def agent():
        conn, _ = server.accept()
        with conn:
            hello = _read(conn)
            _send(conn, {"id": hello["id"], "ok": True, "protocol": 1, "agent": "fake", "version": 0, "shm_dir": shm_dir})
            script(conn)
            while _read(conn) is not None:
                pass

    threading.Thread(target=agent, daemon=True).start()
    return server


def _in_thread(call, timeout=10):
    """What ``call()`` raised (or returned), run on a thread of its own so that a hang fails the test instead of stopping it."""
    outcome = []

    def run():
        try:
            outcome.append(call())
        except BaseException as e:  # noqa: B902 - the outcome is what is checked
            outcome.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise AssertionError("still waiting after %d s" % timeout)
    return outcome[0]


def _send(conn, message):
    body = json.dumps(message).encode("utf-8")
    conn.sendall(struct.pack(">I", len(body)) + body)


def _read(conn):
    """The next frame's object, or None at the end of the connection."""
    head = _read_exactly(conn, 4)
    return None if head is None else json.loads(_read_exactly(conn, struct.unpack(">I", head)[0]))


def _read_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


if __name__ == "__main__":
    unittest.main()
