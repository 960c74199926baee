package ttlentry

import (
	"encoding/binary"
	"testing"
)

// NewestStale must agree with SplitLoose's last date for every format a
// loose entry is stored in.
func TestNewestStaleAgreesWithSplitLoose(t *testing.T) {
	id := []byte{0x10, 1, 2, 3}
	key := append([]byte("prefix-date-"), id...)
	lists := [][]int64{nil, {1_700_000_000_000}, {1_700_000_000_000, 1_700_000_004_000, 1_700_000_009_500}, {-5, 3, 1 << 40}}
	for _, stale := range lists {
		full := []byte{RecordTagLooseFull}
		full = binary.AppendUvarint(full, uint64(len(id)))
		full = append(full, id...)
		full = binary.AppendUvarint(full, uint64(len(stale)))
		for _, d := range stale {
			full = binary.AppendVarint(full, d)
		}
		for name, v := range map[string][]byte{
			"delta": AppendLoose(nil, id, stale, false),
			"log":   AppendLoose(nil, id, stale, true),
			"full":  full,
		} {
			_, split, ok := SplitLoose(key, v)
			if !ok {
				t.Fatalf("%s %v: SplitLoose refused its own value", name, stale)
			}
			got, gotOK := NewestStale(key, v)
			if gotOK != (len(split) > 0) || (gotOK && got != split[len(split)-1]) {
				t.Errorf("%s %v: NewestStale = %d, %v; SplitLoose listed %v", name, stale, got, gotOK, split)
			}
			if _, ok := NewestStale(key, v[:len(v)-1]); ok && len(stale) > 0 {
				t.Errorf("%s %v: a truncated value was read", name, stale)
			}
		}
	}
	if _, ok := NewestStale(key, []byte{RecordTag, 1, 2}); ok {
		t.Error("a record entry's value was read as loose")
	}
}
