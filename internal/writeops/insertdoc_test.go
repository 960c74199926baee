package writeops

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func nested(levels int) bson.D {
	d := bson.D{{Key: "x", Value: 1}}
	for i := 1; i < levels; i++ {
		d = bson.D{{Key: "a", Value: d}}
	}
	return d
}

func TestNestingDepthCountsNonEmptyLevels(t *testing.T) {
	cases := []struct {
		v    any
		want int
	}{
		{bson.D{}, 0},
		{bson.D{{Key: "a", Value: 1}}, 1},
		{bson.D{{Key: "a", Value: bson.D{}}}, 1},
		{bson.D{{Key: "a", Value: bson.A{bson.A{1}}}}, 3},
		{nested(180), 180},
		{nested(181), 181},
	}
	for _, c := range cases {
		if got := nestingDepth(c.v); got != c.want {
			t.Errorf("nestingDepth(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}
