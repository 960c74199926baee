package opstats

import "testing"

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
