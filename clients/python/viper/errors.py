"""Errors of the Viper client: the same reasons, types and retriability as the Java SDK.

A failure is a :class:`ViperError` whose ``reason`` (``"FORMAT"``, ``"CONFIG"``, ...) decides its
type and whether trying again may help, as in Java's ``io.viper.errors``:

=========== ======================== =========
reason      raised as                retriable
=========== ======================== =========
FORMAT      ViperFormatError         no
CONFIG      ViperConfigError         no
NOT_FOUND   ViperNotFoundError       no
UNSUPPORTED ViperUnsupportedError    no
CLOSED      ViperClosedError         no
IO          ViperError               no
INTERNAL    ViperError               no
TRANSFER    RetriableViperError      yes
UNAVAILABLE RetriableViperError      yes
TIMEOUT     ViperTimeoutError        yes
CORRUPT     ViperCorruptDataError    yes
=========== ======================== =========
"""

RETRIABLE = frozenset({"TRANSFER", "UNAVAILABLE", "TIMEOUT", "CORRUPT"})
REASONS = frozenset({"FORMAT", "CONFIG", "CORRUPT", "TRANSFER", "NOT_FOUND", "UNAVAILABLE",
                     "UNSUPPORTED", "TIMEOUT", "CLOSED", "IO", "INTERNAL"})


class ViperError(Exception):
    """Root of every error the client raises. ``reason`` classifies it; the message is one line."""

    def __init__(self, message, reason="INTERNAL"):
        super().__init__(message)
        self.reason = reason if reason in REASONS else "INTERNAL"

    @property
    def retriable(self):
        """Whether trying the same operation again may succeed (follows from ``reason`` alone)."""
        return self.reason in RETRIABLE


class RetriableViperError(ViperError):
    """A failure that may pass on another try: TRANSFER, UNAVAILABLE (and TIMEOUT, CORRUPT)."""


class ViperFormatError(ViperError):
    """A file or message does not follow its format."""

    def __init__(self, message):
        super().__init__(message, "FORMAT")


class ViperConfigError(ViperError):
    """A configuration value or argument is invalid, or the agent refuses the request as made."""

    def __init__(self, message):
        super().__init__(message, "CONFIG")


class ViperNotFoundError(ViperError):
    """The named model, version, tensor or file does not exist."""

    def __init__(self, message):
        super().__init__(message, "NOT_FOUND")


class ViperUnsupportedError(ViperError):
    """The machine lacks a device, driver or library the operation needs."""

    def __init__(self, message):
        super().__init__(message, "UNSUPPORTED")


class ViperClosedError(ViperError):
    """The producer, consumer or lease was used after it was closed."""

    def __init__(self, message):
        super().__init__(message, "CLOSED")


class ViperTimeoutError(RetriableViperError, TimeoutError):
    """An operation did not complete in time."""

    def __init__(self, message):
        super().__init__(message, "TIMEOUT")


class ViperCorruptDataError(RetriableViperError):
    """Bytes arrived that did not match their content hash."""

    def __init__(self, message):
        super().__init__(message, "CORRUPT")


_BY_REASON = {
    "FORMAT": ViperFormatError,
    "CONFIG": ViperConfigError,
    "NOT_FOUND": ViperNotFoundError,
    "UNSUPPORTED": ViperUnsupportedError,
    "CLOSED": ViperClosedError,
    "TIMEOUT": ViperTimeoutError,
    "CORRUPT": ViperCorruptDataError,
}


def error_for(reason, message):
    """The exception for ``reason``, of the type that reason is raised as (Java's ``ViperException.of``)."""
    cls = _BY_REASON.get(reason)
    if cls is not None:
        return cls(message)
    if reason in RETRIABLE:
        return RetriableViperError(message, reason)
    return ViperError(message, reason)
