package shardmerge

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestShardFindCommand pins the command each shard runs: skip dropped,
// limit = skip + limit, singleBatch false, batchSize and the rest as
// sent, and a projection that keeps the sort's fields.
func TestShardFindCommand(t *testing.T) {
	cases := []struct{ name, cmd, shard string }{
		{"skip and limit", `{"find": "c", "filter": {"a": 1}, "skip": 3, "limit": 4, "batchSize": 2}`,
			`{"find": "c", "filter": {"a": 1}, "batchSize": 2, "limit": 7}`},
		{"skip alone", `{"find": "c", "skip": 3}`, `{"find": "c"}`},
		{"limit zero is none", `{"find": "c", "limit": 0, "skip": 2}`, `{"find": "c"}`},
		{"single batch", `{"find": "c", "singleBatch": true, "limit": 2}`, `{"find": "c", "singleBatch": false, "limit": 2}`},
		{"projection without sort", `{"find": "c", "projection": {"b": 1}}`, `{"find": "c", "projection": {"b": 1}}`},
		{"inclusion holding the sort field", `{"find": "c", "sort": {"a.x": 1}, "projection": {"a": 1}}`,
			`{"find": "c", "sort": {"a.x": 1}, "projection": {"a": 1}}`},
		{"inclusion widened", `{"find": "c", "sort": {"a.x": 1, "k": -1}, "projection": {"a.y": 1, "b": 1, "_id": 0}}`,
			`{"find": "c", "sort": {"a.x": 1, "k": -1}, "projection": {"b": 1, "_id": 0, "a": true, "k": true}}`},
		{"sort on an excluded _id", `{"find": "c", "sort": {"_id": 1}, "projection": {"_id": 0, "b": 1}}`,
			`{"find": "c", "sort": {"_id": 1}, "projection": {"b": 1}}`},
		{"exclusion kept", `{"find": "c", "sort": {"k": 1}, "projection": {"b": 0}}`,
			`{"find": "c", "sort": {"k": 1}, "projection": {"b": 0}}`},
		{"exclusion of the sort field", `{"find": "c", "sort": {"k": 1}, "projection": {"b": 0, "k.z": 0}}`,
			`{"find": "c", "sort": {"k": 1}, "projection": {"b": 0}}`},
		{"computed projection goes to the router", `{"find": "c", "sort": {"k": 1}, "projection": {"k": {"$add": [1, 2]}}}`,
			`{"find": "c", "sort": {"k": 1}}`},
		{"natural order keeps the projection", `{"find": "c", "sort": {"$natural": -1}, "projection": {"b": 1}}`,
			`{"find": "c", "sort": {"$natural": -1}, "projection": {"b": 1}}`},
	}
	for _, tc := range cases {
		split, err := SplitFind(ejson(t, tc.cmd), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want := ejson(t, tc.shard); !sameJSON(split.ShardCommand, want) {
			t.Errorf("%s: shard command %s, want %s", tc.name, bsonutil.Format(split.ShardCommand), bsonutil.Format(want))
		}
	}
}

func TestSplitFindOverflowIsMongodsError(t *testing.T) {
	cmd := bson.D{{Key: "find", Value: "c"}, {Key: "skip", Value: int64(2)}, {Key: "limit", Value: int64(9223372036854775807)}}
	_, err := SplitFind(cmd, nil)
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.Overflow ||
		me.Msg != "sum of limit and skip cannot be represented as a 64-bit integer, limit: 9223372036854775807, skip: 2" {
		t.Fatalf("error %v, want mongod's Overflow", err)
	}
}

// TestMergeClosesEveryStream: closing a merge early (a killCursors)
// closes every shard's stream, sorted or not.
func TestMergeClosesEveryStream(t *testing.T) {
	for _, cmd := range []string{`{"find": "c", "sort": {"k": 1}}`, `{"find": "c"}`} {
		split, err := SplitFind(ejson(t, cmd), nil)
		if err != nil {
			t.Fatal(err)
		}
		streams := []*sliceStream{{docs: []bson.D{{{Key: "k", Value: 1}}}}, {docs: []bson.D{{{Key: "k", Value: 0}}}}}
		merged := split.Merge(iterators(streams))
		if _, ok, err := merged.Next(); !ok || err != nil {
			t.Fatalf("%s: first document: %v %v", cmd, ok, err)
		}
		if err := merged.Close(); err != nil {
			t.Fatal(err)
		}
		for i, s := range streams {
			if !s.closed {
				t.Errorf("%s: stream %d left open", cmd, i)
			}
		}
	}
}

// TestMergeReportsWhichStreamFailed: a shard's error ends the merge and
// names the stream.
func TestMergeReportsWhichStreamFailed(t *testing.T) {
	boom := errors.New("shard unreachable")
	for _, sorted := range []bool{true, false} {
		cmd := `{"find": "c"}`
		if sorted {
			cmd = `{"find": "c", "sort": {"k": 1}}`
		}
		split, err := SplitFind(ejson(t, cmd), nil)
		if err != nil {
			t.Fatal(err)
		}
		merged := split.Merge(append(iterators([]*sliceStream{{}}), failingStream{boom}))
		_, _, err = merged.Next()
		if !errors.Is(err, boom) || err.Error() != "shard stream 1: shard unreachable" {
			t.Errorf("sorted %v: error %v", sorted, err)
		}
	}
}

// failingStream is a shard whose next batch fails.
type failingStream struct{ err error }

func (f failingStream) Next() (bson.D, bool, error) { return nil, false, f.err }
func (f failingStream) Close() error                { return nil }

func iterators(streams []*sliceStream) []aggregate.Iterator {
	out := make([]aggregate.Iterator, len(streams))
	for i, s := range streams {
		out[i] = s
	}
	return out
}

// TestSplitFindRefusesWhatFindsParserRefuses: arguments the command
// layer's find parser refuses fail here with its codes.
func TestSplitFindRefusesWhatFindsParserRefuses(t *testing.T) {
	cases := []struct {
		cmd  string
		code mongoerr.Code
	}{
		{`{"find": "c", "skip": "1"}`, mongoerr.TypeMismatch},
		{`{"find": "c", "limit": 1.5}`, mongoerr.Location51024},
		{`{"find": "c", "limit": -1}`, mongoerr.Location51024},
		{`{"find": "c", "sort": 1}`, mongoerr.TypeMismatch},
	}
	for _, tc := range cases {
		_, err := SplitFind(ejson(t, tc.cmd), nil)
		var me *mongoerr.Error
		if !errors.As(err, &me) || me.Code != tc.code {
			t.Errorf("%s: error %v, want code %d", tc.cmd, err, tc.code)
		}
	}
}
