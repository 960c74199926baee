// Package wire frames and unframes MongoDB wire-protocol messages (OP_MSG,
// OP_QUERY, OP_REPLY and OP_COMPRESSED). It knows nothing about what a
// command means: it turns bytes into validated messages and replies into
// bytes.
package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Limits advertised to clients in hello and enforced here.
const (
	// MaxMessageSize is the largest wire message accepted (maxMessageSizeBytes).
	MaxMessageSize = 48_000_000
	// MaxBSONObjectSize is the largest document a client may store (maxBsonObjectSize).
	MaxBSONObjectSize = 16 * 1024 * 1024
	// MaxWriteBatchSize is the largest number of statements in one write command.
	MaxWriteBatchSize = 100_000
	// HeaderSize is the size of the standard message header.
	HeaderSize = 16
)

// OpCode identifies the kind of wire message.
type OpCode int32

// The opcodes Mayfly reads or writes.
const (
	OpReply      OpCode = 1
	OpQuery      OpCode = 2004
	OpCompressed OpCode = 2012
	OpMsg        OpCode = 2013
)

func (o OpCode) String() string {
	switch o {
	case OpReply:
		return "OP_REPLY"
	case OpQuery:
		return "OP_QUERY"
	case OpCompressed:
		return "OP_COMPRESSED"
	case OpMsg:
		return "OP_MSG"
	}
	return fmt.Sprintf("opcode(%d)", int32(o))
}

// OP_MSG flag bits.
const (
	FlagChecksumPresent uint32 = 1 << 0
	FlagMoreToCome      uint32 = 1 << 1
	FlagExhaustAllowed  uint32 = 1 << 16

	// requiredFlagMask covers the bits a receiver must understand; unknown
	// bits outside it may be ignored.
	requiredFlagMask uint32 = 0xffff
	knownFlags              = FlagChecksumPresent | FlagMoreToCome
)

// Header is the 16-byte header that starts every message.
type Header struct {
	MessageLength int32
	RequestID     int32
	ResponseTo    int32
	OpCode        OpCode
}

func decodeHeader(b []byte) Header {
	return Header{
		MessageLength: int32(binary.LittleEndian.Uint32(b[0:])),
		RequestID:     int32(binary.LittleEndian.Uint32(b[4:])),
		ResponseTo:    int32(binary.LittleEndian.Uint32(b[8:])),
		OpCode:        OpCode(binary.LittleEndian.Uint32(b[12:])),
	}
}

func putHeader(b []byte, h Header) {
	binary.LittleEndian.PutUint32(b[0:], uint32(h.MessageLength))
	binary.LittleEndian.PutUint32(b[4:], uint32(h.RequestID))
	binary.LittleEndian.PutUint32(b[8:], uint32(h.ResponseTo))
	binary.LittleEndian.PutUint32(b[12:], uint32(h.OpCode))
}

// Error reports a malformed message. The server uses Fatal and Consumed to
// decide between answering with an error and dropping the connection.
type Error struct {
	// Code and Msg are what a client is told.
	Code mongoerr.Code
	Msg  string
	// Header is the message header as read from the stream (the outer one
	// for OP_COMPRESSED); zero if the header itself was unreadable.
	Header Header
	// OpCode is the effective opcode (the wrapped one for OP_COMPRESSED),
	// or zero if unknown.
	OpCode OpCode
	// Flags are the OP_MSG flag bits, if they were read.
	Flags uint32
	// Fatal means the stream or the message's framing cannot be trusted, so
	// the connection should be closed.
	Fatal bool
	// Consumed means the whole message was read off the stream, so a reply
	// would be correctly ordered.
	Consumed bool
	// Err is an underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("wire: %s: %v", e.Msg, e.Err)
	}
	return "wire: " + e.Msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// MongoError returns the command error a client should see.
func (e *Error) MongoError() *mongoerr.Error { return mongoerr.New(e.Code, e.Msg) }

// CompressorID identifies a compression algorithm in OP_COMPRESSED.
type CompressorID uint8

// The compressor IDs of the OP_COMPRESSED specification.
const (
	CompressorNoop   CompressorID = 0
	CompressorSnappy CompressorID = 1
	CompressorZlib   CompressorID = 2
	CompressorZstd   CompressorID = 3
)

// String returns the name used in the hello `compression` list.
func (c CompressorID) String() string {
	switch c {
	case CompressorNoop:
		return "noop"
	case CompressorSnappy:
		return "snappy"
	case CompressorZlib:
		return "zlib"
	case CompressorZstd:
		return "zstd"
	}
	return fmt.Sprintf("compressor(%d)", uint8(c))
}

// CompressorByName maps a hello `compression` name to its ID. "noop" is not
// negotiable, so only snappy, zlib and zstd are recognised.
func CompressorByName(name string) (CompressorID, bool) {
	switch name {
	case "snappy":
		return CompressorSnappy, true
	case "zlib":
		return CompressorZlib, true
	case "zstd":
		return CompressorZstd, true
	}
	return 0, false
}
