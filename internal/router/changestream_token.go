package router

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
)

// mergedToken names a place in a merged change stream: a shard's change
// (its log position and kind) and the shard. Two shards can stamp the
// same cluster time, so the position alone would not say which of their
// changes a client has seen. A token without a shard is a high-water
// mark: every shard's changes at pos and before.
type mergedToken struct {
	pos   changestream.Position
	kind  byte
	shard string
}

// String is the token's _data (changestream.MergedTokenData).
func (t mergedToken) String() string { return changestream.MergedTokenData(t.pos, t.kind, t.shard) }

// doc is the token as events and postBatchResumeToken carry it.
func (t mergedToken) doc() bson.D { return bson.D{{Key: "_data", Value: t.String()}} }

// parseMergedToken reads a resumeAfter or startAfter value.
func parseMergedToken(field string, v any) (mergedToken, error) {
	pos, kind, shard, err := changestream.ParseMergedToken(field, v)
	return mergedToken{pos: pos, kind: kind, shard: shard}, err
}

// compareMerged orders merged tokens as the router hands their changes
// out: by position, then shard (a high-water mark after every shard),
// then kind (a change before the invalidate it causes).
func compareMerged(a, b mergedToken) int {
	switch {
	case a.pos.After(b.pos):
		return 1
	case b.pos.After(a.pos):
		return -1
	}
	if c := compareShards(a.shard, b.shard); c != 0 {
		return c
	}
	return int(a.kind) - int(b.kind)
}

// compareShards orders shard names, the empty name (every shard) last.
func compareShards(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "":
		return 1
	case b == "":
		return -1
	}
	return strings.Compare(a, b)
}
