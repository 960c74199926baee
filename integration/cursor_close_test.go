package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestCursorStaysOpenAfterAFullBatch: as on mongod, a first batch that
// exactly fills batchSize leaves a scan's cursor open, and the getMore
// that finds nothing closes it; a cursor whose source knows it has ended
// (a reached limit, a list served from memory) or that ended before
// filling the batch closes at once.
func TestCursorStaysOpenAfterAFullBatch(t *testing.T) {
	db := newDB(t)
	const n = 3
	docs := bson.A{}
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	runCmd(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}})
	for _, tc := range []struct {
		name     string
		cmd      bson.D
		first    int  // documents in firstBatch
		open     bool // cursor id != 0 after the first batch
		getMores []int
	}{
		{"find batchSize = count", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: n}}, n, true, []int{0}},
		{"find batchSize > count", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: n + 1}}, n, false, nil},
		{"find limit = batchSize", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 2}, {Key: "limit", Value: 2}}, 2, false, nil},
		{"find limit reached in getMore", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}, {Key: "limit", Value: 2}}, 1, true, []int{1}},
		{"find limit above count", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: n}, {Key: "limit", Value: n + 5}}, n, true, []int{0}},
		{"find sorted", bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}, {Key: "batchSize", Value: 2}}, 2, true, []int{1}},
		{"aggregate batchSize = count", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: n}}}}, n, true, []int{0}},
		{"listCollections", bson.D{{Key: "listCollections", Value: 1}, {Key: "cursor", Value: bson.D{{Key: "batchSize", Value: 1}}}}, 1, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, batch := cursorReply(t, runCmd(t, db, tc.cmd), "firstBatch")
			if len(batch) != tc.first || (id != 0) != tc.open {
				t.Fatalf("first batch of %d, cursor %d; want %d, open %v", len(batch), id, tc.first, tc.open)
			}
			for i, want := range tc.getMores {
				id, batch = cursorReply(t, runCmd(t, db, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}), "nextBatch")
				last := i == len(tc.getMores)-1
				if len(batch) != want || (id == 0) != last {
					t.Fatalf("getMore %d: %d documents, cursor %d; want %d, closed %v", i, len(batch), id, want, last)
				}
			}
		})
	}
}

func cursorReply(t *testing.T, reply bson.D, batchKey string) (int64, bson.A) {
	t.Helper()
	cur, _ := lookupField(reply, "cursor").(bson.D)
	id, _ := lookupField(cur, "id").(int64)
	batch, _ := lookupField(cur, batchKey).(bson.A)
	return id, batch
}
