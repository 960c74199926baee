package changestream

import (
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// A router's merged stream names a place by a shard's change (its log
// position and kind) and the shard, since two shards can stamp the same
// cluster time; a place without a shard is a high-water mark, every
// shard's changes at the position and before.

// mergedTokenVersion tells a router's tokens from a shard's (version 1).
const mergedTokenVersion = 2

// mergedTokenHeader is the fixed part of an encoded token: version,
// timestamp, index, kind.
const mergedTokenHeader = 1 + 4 + 4 + 4 + 1

// MergedTokenData is a merged place's _data: hex of the fixed part then
// the shard's name, so tokens of one shard sort as their positions do.
func MergedTokenData(pos Position, kind byte, shard string) string {
	b := make([]byte, mergedTokenHeader, mergedTokenHeader+len(shard))
	b[0] = mergedTokenVersion
	binary.BigEndian.PutUint32(b[1:], pos.TS.T)
	binary.BigEndian.PutUint32(b[5:], pos.TS.I)
	binary.BigEndian.PutUint32(b[9:], pos.Index)
	b[13] = kind
	return strings.ToUpper(hex.EncodeToString(append(b, shard...)))
}

// ParseMergedToken reads a merged resumeAfter or startAfter value with
// the errors mongod gives a malformed token.
func ParseMergedToken(field string, v any) (pos Position, kind byte, shard string, err error) {
	s, err := ResumeTokenData(field, v)
	if err != nil {
		return Position{}, 0, "", err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) < mergedTokenHeader || b[0] != mergedTokenVersion || b[13] > KindInvalidate {
		return Position{}, 0, "", mongoerr.Newf(mongoerr.FailedToParse, "Bad resume token: _data is not a resume token of this router: %s", s)
	}
	pos = Position{TS: Timestamp{T: binary.BigEndian.Uint32(b[1:]), I: binary.BigEndian.Uint32(b[5:])}, Index: binary.BigEndian.Uint32(b[9:])}
	if b[13] == KindInvalidate && field == "resumeAfter" {
		return Position{}, 0, "", mongoerr.New(mongoerr.InvalidResumeToken, "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	return pos, b[13], string(b[mergedTokenHeader:]), nil
}
