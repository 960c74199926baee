package changestream

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"

	"github.com/mayflydb/mayfly/internal/keyspace"
)

// tag is the first byte of every change log key.
const tag = byte(keyspace.Events)

// Timestamp is MongoDB's (seconds, increment) cluster time.
type Timestamp struct{ T, I uint32 }

// After reports whether ts is later than o.
func (ts Timestamp) After(o Timestamp) bool {
	return ts.T > o.T || ts.T == o.T && ts.I > o.I
}

// Position is a place in the change log: the change with index Index
// within the write stamped TS. Index math.MaxUint32 stands after every
// change of TS (a high-water mark).
type Position struct {
	TS    Timestamp
	Index uint32
}

// After reports whether p comes after o.
func (p Position) After(o Position) bool {
	return p.TS.After(o.TS) || p.TS == o.TS && p.Index > o.Index
}

// HighWater is the position after every change stamped ts or earlier.
func HighWater(ts Timestamp) Position { return Position{TS: ts, Index: math.MaxUint32} }

const keyLen = 1 + 4 + 4 + 4

// Key is the change log key of p.
func Key(p Position) []byte {
	return AppendKey(make([]byte, 0, keyLen), p)
}

// AppendKey appends p's key to dst.
func AppendKey(dst []byte, p Position) []byte {
	dst = append(dst, tag)
	dst = binary.BigEndian.AppendUint32(dst, p.TS.T)
	dst = binary.BigEndian.AppendUint32(dst, p.TS.I)
	return binary.BigEndian.AppendUint32(dst, p.Index)
}

// keyPosition decodes a change log key.
func keyPosition(k []byte) (Position, bool) {
	if len(k) != keyLen || k[0] != tag {
		return Position{}, false
	}
	return Position{
		TS:    Timestamp{T: binary.BigEndian.Uint32(k[1:]), I: binary.BigEndian.Uint32(k[5:])},
		Index: binary.BigEndian.Uint32(k[9:]),
	}, true
}

// trimKey holds the position up to which the log was trimmed: it sorts
// before every record, whose timestamps are never zero.
var trimKey = Key(Position{})

// recordsStart is the first key after the trim mark: where the records
// begin.
var recordsStart = append(Key(Position{}), 0)

// LogStart and LogEnd bound the change log's key space (the trim mark
// included).
var (
	LogStart = keyspace.Events.Start()
	LogEnd   = keyspace.Events.End()
)

// Record values are wallMillis(8) followed by the encoded event.
const wallLen = 8

// AppendRecord appends a record value: the wall clock time of the write
// (Unix ms) and the event.
func AppendRecord(dst []byte, wallMillis int64, ev []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(wallMillis))
	return append(dst, ev...)
}

// Token kinds: a resume token names a change, or the invalidate event a
// collection stream ends with (startAfter can resume past it).
const (
	tokenVersion        = 1
	KindEvent      byte = 0
	KindInvalidate      = 1
)

// Token is a decoded resume token.
type Token struct {
	Pos  Position
	Kind byte
}

// String encodes the token as the hex string of its _data field: version,
// timestamp, index and kind, big-endian, so tokens sort as positions do.
func (t Token) String() string {
	return string(t.AppendHex(make([]byte, 0, 2*tokenLen)))
}

// tokenLen is a token's length in bytes, before hex encoding.
const tokenLen = 14

// AppendHex appends String's text to dst, without a string of its own: a
// stream encoding events straight into their bytes writes it in place.
func (t Token) AppendHex(dst []byte) []byte {
	const digits = "0123456789ABCDEF"
	var b [tokenLen]byte
	b[0] = tokenVersion
	binary.BigEndian.PutUint32(b[1:], t.Pos.TS.T)
	binary.BigEndian.PutUint32(b[5:], t.Pos.TS.I)
	binary.BigEndian.PutUint32(b[9:], t.Pos.Index)
	b[13] = t.Kind
	for _, c := range b {
		dst = append(dst, digits[c>>4], digits[c&0xF])
	}
	return dst
}

// ErrBadToken is returned for a _data string that is not one of ours.
var ErrBadToken = errors.New("changestream: malformed resume token")

// ParseToken decodes a token's _data string.
func ParseToken(s string) (Token, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != tokenLen || b[0] != tokenVersion || b[13] > KindInvalidate {
		return Token{}, ErrBadToken
	}
	return Token{
		Pos: Position{
			TS:    Timestamp{T: binary.BigEndian.Uint32(b[1:]), I: binary.BigEndian.Uint32(b[5:])},
			Index: binary.BigEndian.Uint32(b[9:]),
		},
		Kind: b[13],
	}, nil
}
