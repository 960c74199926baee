package opstats

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Start counts find as a query, getMore as a getmore, every other command
// but the writes as a command, and the writes not at all (they count when
// done, by what they ran).
func TestOpCountersStart(t *testing.T) {
	cases := []struct {
		name                    string
		query, getMore, command int64
	}{
		{"find", 1, 0, 0},
		{"getMore", 0, 1, 0},
		{"insert", 0, 0, 0},
		{"update", 0, 0, 0},
		{"delete", 0, 0, 0},
		{"bulkWrite", 0, 0, 0},
		{"findAndModify", 0, 0, 1},
		{"aggregate", 0, 0, 1},
		{"count", 0, 0, 1},
	}
	for _, tc := range cases {
		var c OpCounters
		c.Start(tc.name)
		if c.Query.Load() != tc.query || c.GetMore.Load() != tc.getMore || c.Command.Load() != tc.command ||
			c.Insert.Load()+c.Update.Load()+c.Delete.Load() != 0 {
			t.Errorf("%s: query %d getmore %d command %d insert %d update %d delete %d", tc.name,
				c.Query.Load(), c.GetMore.Load(), c.Command.Load(), c.Insert.Load(), c.Update.Load(), c.Delete.Load())
		}
	}
}

// Done counts an insert's documents and the update and delete statements
// that ran: all of an unordered command's, an ordered one's up to its
// first error; other commands not at all.
func TestOpCountersDone(t *testing.T) {
	stmts := bson.A{bson.D{}, bson.D{}, bson.D{}, bson.D{}}
	failedAt1 := bson.D{{Key: "n", Value: int32(1)}, {Key: "writeErrors", Value: bson.A{bson.D{{Key: "index", Value: int32(1)}}}}}
	cases := []struct {
		name                   string
		body, reply            bson.D
		insert, update, delete int64
	}{
		{"insert", nil, bson.D{{Key: "n", Value: int32(3)}}, 3, 0, 0},
		{"update", bson.D{{Key: "updates", Value: stmts}}, bson.D{}, 0, 4, 0},
		{"update", bson.D{{Key: "updates", Value: stmts}}, failedAt1, 0, 2, 0},
		{"update", bson.D{{Key: "updates", Value: stmts}, {Key: "ordered", Value: false}}, failedAt1, 0, 4, 0},
		{"delete", bson.D{{Key: "deletes", Value: stmts}}, failedAt1, 0, 0, 2},
		{"find", nil, bson.D{}, 0, 0, 0},
	}
	for _, tc := range cases {
		var c OpCounters
		c.Done(tc.name, tc.body, tc.reply)
		if c.Insert.Load() != tc.insert || c.Update.Load() != tc.update || c.Delete.Load() != tc.delete {
			t.Errorf("%s %v: insert %d update %d delete %d", tc.name, tc.body, c.Insert.Load(), c.Update.Load(), c.Delete.Load())
		}
	}
}
