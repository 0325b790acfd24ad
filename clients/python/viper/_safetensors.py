"""The safetensors layout the agent and the client share: an 8-byte little-endian header length n,
n bytes of JSON (padded with spaces to a multiple of 8), then the tensors back to back.

Also the element types: safetensors names, numpy dtypes and (when torch is present) torch dtypes.
"""

import json
import struct
from collections import namedtuple

import numpy as np

from .errors import ViperConfigError, ViperFormatError

METADATA_KEY = "__metadata__"
MAX_HEADER_BYTES = 100_000_000

# Safetensors name -> numpy dtype. BF16 and the two F8 types have no numpy dtype: their arrays hold
# the raw bits (uint16, uint8); torch views give them their real type.
NUMPY = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "F8_E4M3": np.dtype("u1"), "F8_E5M2": np.dtype("u1"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
ITEMSIZE = {name: dt.itemsize for name, dt in NUMPY.items()}
_FROM_NUMPY = {
    "f8": "F64", "f4": "F32", "f2": "F16", "i8": "I64", "i4": "I32", "i2": "I16", "i1": "I8",
    "u8": "U64", "u4": "U32", "u2": "U16", "u1": "U8", "b1": "BOOL",
}

Entry = namedtuple("Entry", "name dtype shape begin end")
Header = namedtuple("Header", "metadata entries data_start")


def dtype_of_numpy(dtype):
    """The safetensors name of a numpy dtype, or a ViperConfigError-worthy None."""
    return _FROM_NUMPY.get(dtype.kind + str(dtype.itemsize) if dtype.kind in "fiub" else "")


def _torch_table():
    import torch
    table = {
        torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
        torch.bool: "BOOL",
    }
    for attr, name in (("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
                       ("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")):
        if hasattr(torch, attr):
            table[getattr(torch, attr)] = name
    return table


_TORCH = None


def torch_dtypes():
    """torch dtype -> safetensors name (torch imported on first use)."""
    global _TORCH
    if _TORCH is None:
        _TORCH = _torch_table()
    return _TORCH


def torch_dtype(name):
    """The torch dtype of a safetensors name, or None when this torch has none."""
    for t, n in torch_dtypes().items():
        if n == name:
            return t
    return None


def encode_header(entries, metadata):
    """The bytes that start an image of ``entries`` (name, dtype, shape, nbytes) laid out back to back."""
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ViperConfigError("metadata keys and values must be strings, got %r: %r" % (k, v))
        header[METADATA_KEY] = dict(metadata)
    offset = 0
    for name, dtype, shape, nbytes in entries:
        if name == METADATA_KEY:
            raise ViperConfigError("tensor name %s is reserved for the metadata" % METADATA_KEY)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape], "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    body = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    body += b" " * (-len(body) % 8)
    return struct.pack("<Q", len(body)) + body


def parse_header(buffer, offset, source):
    """Reads the header of the image at ``offset`` in ``buffer`` (bytes-like). Entries in data order."""
    view = memoryview(buffer)
    if len(view) < offset + 8:
        raise ViperFormatError("%s: fewer than 8 bytes at offset %d" % (source, offset))
    (n,) = struct.unpack_from("<Q", view, offset)
    if n > MAX_HEADER_BYTES or offset + 8 + n > len(view):
        raise ViperFormatError("%s: header length %d does not fit the file" % (source, n))
    try:
        header = json.loads(bytes(view[offset + 8:offset + 8 + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ViperFormatError("%s: header is not JSON: %s" % (source, e)) from None
    if not isinstance(header, dict):
        raise ViperFormatError("%s: header is not a JSON object" % source)
    metadata = header.pop(METADATA_KEY, None) or {}
    entries = []
    for name, t in header.items():
        try:
            begin, end = t["data_offsets"]
            entries.append(Entry(name, t["dtype"], tuple(int(d) for d in t["shape"]), int(begin), int(end)))
        except (KeyError, TypeError, ValueError):
            raise ViperFormatError("%s: tensor %r has no dtype, shape and data_offsets" % (source, name)) from None
        if t["dtype"] not in NUMPY:
            raise ViperFormatError("%s: tensor %r has unknown dtype %r" % (source, name, t["dtype"]))
    entries.sort(key=lambda e: e.begin)
    return Header(metadata, entries, offset + 8 + n)
