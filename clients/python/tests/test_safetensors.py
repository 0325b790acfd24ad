"""The client's safetensors layout: it reads the repository's test files (written by an independent
writer) as they are described, and writes headers the reference way."""

import glob
import json
import os
import struct
import unittest

import numpy as np

import viper
from viper import _safetensors as st

TESTDATA = os.environ.get("VIPER_TESTDATA") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "testdata")


class SafetensorsTest(unittest.TestCase):
    def test_the_test_files_read_as_their_expected_listing_says(self):
        files = sorted(glob.glob(os.path.join(TESTDATA, "safetensors", "*.safetensors")))
        self.assertGreaterEqual(len(files), 4, "testdata/safetensors at " + TESTDATA)
        for path in files:
            with open(path, "rb") as f:
                image = f.read()
            with open(path + ".expected.json") as f:
                expected = json.load(f)
            h = st.parse_header(image, 0, path)
            self.assertEqual(h.data_start, 8 + expected["header_bytes"], path)
            self.assertEqual(h.metadata, expected["metadata"], path)
            self.assertEqual([(e.name, e.dtype, list(e.shape), e.begin, e.end - e.begin) for e in h.entries],
                             [(t["name"], t["dtype"], t["shape"], t["offset"], t["length"]) for t in expected["tensors"]], path)
            for e, t in zip(h.entries, expected["tensors"]):
                if e.dtype in ("BF16", "F8_E4M3", "F8_E5M2") or e.end == e.begin:
                    continue  # no numpy type: raw bits
                a = np.frombuffer(image, st.NUMPY[e.dtype], (e.end - e.begin) // st.ITEMSIZE[e.dtype], h.data_start + e.begin)
                self.assertEqual(float(a.astype(np.float64).min()), t["min"], e.name)
                self.assertEqual(float(a.astype(np.float64).max()), t["max"], e.name)

    def test_a_header_is_the_length_then_compact_json_padded_to_eight(self):
        b = st.encode_header([("a", "F32", (2, 3), 24), ("b", "U8", (5,), 5)], {"k": "v"})
        (n,) = struct.unpack_from("<Q", b)
        self.assertEqual(len(b), 8 + n)
        self.assertEqual(n % 8, 0)
        text = b[8:].decode("utf-8")
        self.assertEqual(text.rstrip(" "), '{"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},'
                                           '"b":{"dtype":"U8","shape":[5],"data_offsets":[24,29]}}')
        h = st.parse_header(b + bytes(29), 0, "x")
        self.assertEqual([e.name for e in h.entries], ["a", "b"])
        self.assertEqual(h.metadata, {"k": "v"})

    def test_metadata_must_be_strings(self):
        with self.assertRaises(viper.ViperConfigError):
            st.encode_header([], {"step": 3})

    def test_numpy_types_map_to_safetensors_names(self):
        self.assertEqual(st.dtype_of_numpy(np.dtype(">f4")), "F32")
        self.assertEqual(st.dtype_of_numpy(np.dtype(bool)), "BOOL")
        self.assertEqual(st.dtype_of_numpy(np.dtype(np.uint16)), "U16")
        self.assertIsNone(st.dtype_of_numpy(np.dtype(np.complex64)))


if __name__ == "__main__":
    unittest.main()
