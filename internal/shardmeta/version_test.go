package shardmeta

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestChunkVersionWireForm(t *testing.T) {
	v := ChunkVersion{Epoch: bson.NewObjectID(), Timestamp: ts(100, 2), Major: 3, Minor: 7}
	d := v.Doc()
	if len(d) != 3 || d[0].Key != "e" || d[1].Key != "t" || d[2].Key != "v" || d[2].Value != ts(3, 7) {
		t.Fatalf("Doc = %v", d)
	}
	back, err := ParseChunkVersion(d)
	if err != nil || back != v {
		t.Fatalf("ParseChunkVersion = %v, %v; want %v", back, err, v)
	}
	for _, bad := range []bson.D{
		{{Key: "e", Value: v.Epoch}, {Key: "t", Value: v.Timestamp}},
		{{Key: "e", Value: "x"}, {Key: "t", Value: v.Timestamp}, {Key: "v", Value: ts(1, 0)}},
		{{Key: "e", Value: v.Epoch}, {Key: "t", Value: v.Timestamp}, {Key: "v", Value: int64(1)}},
	} {
		if _, err := ParseChunkVersion(bad); err == nil {
			t.Errorf("ParseChunkVersion(%v) accepted", bad)
		}
	}
}

// TestChunkVersionOrder: which version is newer and which pairs a shard
// accepts, across incarnations, majors and minors.
func TestChunkVersionOrder(t *testing.T) {
	e1, e2 := bson.NewObjectID(), bson.NewObjectID()
	base := ChunkVersion{Epoch: e1, Timestamp: ts(10, 0), Major: 2, Minor: 3}
	at := func(major, minor uint32) ChunkVersion { v := base; v.Major, v.Minor = major, minor; return v }
	recreated := ChunkVersion{Epoch: e2, Timestamp: ts(20, 0), Major: 1, Minor: 0}
	for _, tc := range []struct {
		name          string
		a, b          ChunkVersion
		older, writes bool
	}{
		{"same", base, base, false, true},
		{"lower minor", at(2, 1), base, true, true},
		{"higher minor", at(2, 9), base, false, true},
		{"lower major", at(1, 9), base, true, false},
		{"higher major", at(3, 0), base, false, false},
		{"earlier incarnation, higher counters", at(9, 9), recreated, true, false},
		{"later incarnation", recreated, base, false, false},
		{"unsharded vs sharded", Unsharded, base, true, false},
	} {
		if got := tc.a.IsOlderThan(tc.b); got != tc.older {
			t.Errorf("%s: %v.IsOlderThan(%v) = %v", tc.name, tc.a, tc.b, got)
		}
		if got := tc.a.IsWriteCompatibleWith(tc.b); got != tc.writes {
			t.Errorf("%s: IsWriteCompatibleWith = %v", tc.name, got)
		}
		if tc.a != tc.b && tc.a.IsOlderThan(tc.b) == tc.b.IsOlderThan(tc.a) {
			t.Errorf("%s: order is not antisymmetric", tc.name)
		}
	}
}
