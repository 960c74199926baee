package keyenc

import (
	"bytes"
	"testing"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// FuzzKeyOrder checks the order property on pairs of values built from the
// fuzzer's bytes by the same generator the property tests use.
func FuzzKeyOrder(f *testing.F) {
	f.Add([]byte{0}, []byte{1})
	f.Add([]byte{5, 3}, []byte{6, 3})
	f.Add([]byte{19, 2, 1, 5}, []byte{20, 2, 0, 0})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fuzzlimit.Run(t, func() {
			va := genValue(&byteChooser{b: a}, 3)
			vb := genValue(&byteChooser{b: b}, 3)
			if err := checkPair(va, vb); err != nil {
				t.Fatal(err)
			}
		}, a, b)
	})
}

// FuzzRoundTrip checks that generated values survive encode/decode, and
// that decoding arbitrary bytes fails cleanly rather than panicking.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{4, 7})
	f.Add([]byte{0x1c, 0x80, 0x00, 0x00})
	f.Add([]byte{0x30, 0x20, 0x61, 0x00, 0xff, 0x00, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzlimit.Run(t, func() {
			if err := checkRoundTrip(genValue(&byteChooser{b: data}, 3)); err != nil {
				t.Fatal(err)
			}
			for desc, dec := range []func([]byte) (any, []byte, error){DecodeValue, DecodeValueDesc} {
				v, rest, err := dec(data)
				if err != nil {
					continue
				}
				if skipped, err := SkipValue(data, desc == 1); err != nil || !bytes.Equal(skipped, rest) {
					t.Fatalf("decoded % x to rest % x, skipped to % x (%v)", data, rest, skipped, err)
				}
				// Whatever decodes must be a value the encoder accepts.
				if err := checkRoundTrip(v); err != nil {
					t.Fatalf("decoded % x to %#v (rest % x): %v", data, v, rest, err)
				}
			}
		}, data)
	})
}
