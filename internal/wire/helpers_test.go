package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

var allCompressors = []CompressorID{CompressorSnappy, CompressorZlib, CompressorZstd}

func mustDoc(t testing.TB, v any) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	return b
}

// rawMsg builds an OP_MSG from raw section bytes, with a correct length.
func rawMsg(flags uint32, sections ...[]byte) []byte {
	b := make([]byte, HeaderSize, 64)
	b = binary.LittleEndian.AppendUint32(b, flags)
	for _, s := range sections {
		b = append(b, s...)
	}
	putHeader(b, Header{int32(len(b)), 1, 0, OpMsg})
	return b
}

func kind0(doc []byte) []byte { return append([]byte{0}, doc...) }

// kind1 builds a kind-1 section with a correct size.
func kind1(id string, docs ...[]byte) []byte {
	return appendSequence(nil, Sequence{Identifier: id, Docs: toRaws(docs)})
}

func toRaws(docs [][]byte) []bson.Raw {
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out
}

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func readAll(b []byte) (*Message, error) {
	return ReadMessage(bytes.NewReader(b), NewCodec(allCompressors...))
}

// wantWireErr checks that err is an *Error with the given code and
// disposition.
func wantWireErr(t *testing.T, err error, code mongoerr.Code, fatal, consumed bool) *Error {
	t.Helper()
	var we *Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a *wire.Error", err, err)
	}
	if we.Code != code || we.Fatal != fatal || we.Consumed != consumed {
		t.Fatalf("got code %d fatal %v consumed %v (%v); want code %d fatal %v consumed %v",
			we.Code, we.Fatal, we.Consumed, we, code, fatal, consumed)
	}
	return we
}
