package repl

import (
	"bytes"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
)

func TestExpiryKeysRoundTrip(t *testing.T) {
	keys := [][]byte{
		[]byte("i\x00\x00\x00\x07ttl\x09\x80\x01aa"),
		[]byte("i\x00\x00\x00\x07ttl\x09\x80\x01ab"),
		[]byte("i\x00\x00\x00\x07ttl\x09\x80\x02"),
		[]byte("i\x00\x00\x00\x07"), // shorter than the key before
		[]byte("j"),                 // nothing shared
	}
	var x expiryKeys
	for _, k := range keys {
		x.add(k)
	}
	e := &entry{kind: kindWrite, flags: flagExpiry, expiries: x, payload: []byte("batch")}
	got, err := decodeEntry(e.encode())
	if err != nil {
		t.Fatal(err)
	}
	back, err := got.expiries.keys()
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(keys) || !bytes.Equal(got.payload, e.payload) {
		t.Fatalf("%d keys back, payload %q", len(back), got.payload)
	}
	for i := range keys {
		if !bytes.Equal(back[i], keys[i]) {
			t.Fatalf("key %d: %q, want %q", i, back[i], keys[i])
		}
	}
	if len(x.enc) >= len(bytes.Join(keys, nil)) {
		t.Fatalf("%d bytes encoded for %d bytes of keys: the shared prefixes were not left out", len(x.enc), len(bytes.Join(keys, nil)))
	}
	bad := e.encode()
	if _, err := decodeEntry(bad[:len(bad)-len(e.payload)-2]); err == nil {
		t.Fatal("a truncated expiries section decoded")
	}
}

func TestEntryWithExpiriesStartsItsApplyGroup(t *testing.T) {
	write := func(flags byte) *pb.Entry {
		return &pb.Entry{Data: (&entry{kind: kindWrite, flags: flags}).encode()}
	}
	w, x := write(0), write(flagExpiry)
	cases := []struct {
		ents []*pb.Entry
		want int
	}{
		{[]*pb.Entry{w, w, w}, 3},
		{[]*pb.Entry{w, w, x, w}, 2}, // the writes before it are in storage first
		{[]*pb.Entry{x, w, w}, 3},    // what follows it may share its group
		{[]*pb.Entry{x, x}, 1},
	}
	for i, c := range cases {
		if got := groupEnd(c.ents); got != c.want {
			t.Errorf("case %d: group of %d, want %d", i, got, c.want)
		}
	}
}
