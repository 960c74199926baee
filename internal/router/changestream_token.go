package router

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
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

// mergedTokenVersion tells a router's tokens from a shard's (version 1).
const mergedTokenVersion = 2

// mergedTokenHeader is the fixed part of an encoded token: version,
// timestamp, index, kind.
const mergedTokenHeader = 1 + 4 + 4 + 4 + 1

// String is the token's _data: hex of the fixed part then the shard's
// name, so tokens of one shard sort as their positions do.
func (t mergedToken) String() string {
	b := make([]byte, mergedTokenHeader, mergedTokenHeader+len(t.shard))
	b[0] = mergedTokenVersion
	binary.BigEndian.PutUint32(b[1:], t.pos.TS.T)
	binary.BigEndian.PutUint32(b[5:], t.pos.TS.I)
	binary.BigEndian.PutUint32(b[9:], t.pos.Index)
	b[13] = t.kind
	return strings.ToUpper(hex.EncodeToString(append(b, t.shard...)))
}

// doc is the token as events and postBatchResumeToken carry it.
func (t mergedToken) doc() bson.D { return bson.D{{Key: "_data", Value: t.String()}} }

// parseMergedToken reads a resumeAfter or startAfter value with the
// errors mongod gives a malformed token.
func parseMergedToken(field string, v any) (mergedToken, error) {
	s, err := changestream.ResumeTokenData(field, v)
	if err != nil {
		return mergedToken{}, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) < mergedTokenHeader || b[0] != mergedTokenVersion || b[13] > changestream.KindInvalidate {
		return mergedToken{}, mongoerr.Newf(mongoerr.FailedToParse, "Bad resume token: _data is not a resume token of this router: %s", s)
	}
	tok := mergedToken{
		pos: changestream.Position{
			TS:    changestream.Timestamp{T: binary.BigEndian.Uint32(b[1:]), I: binary.BigEndian.Uint32(b[5:])},
			Index: binary.BigEndian.Uint32(b[9:]),
		},
		kind:  b[13],
		shard: string(b[mergedTokenHeader:]),
	}
	if tok.kind == changestream.KindInvalidate && field == "resumeAfter" {
		return mergedToken{}, mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	return tok, nil
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
