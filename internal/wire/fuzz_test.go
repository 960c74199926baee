package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
)

// FuzzReadMessage feeds arbitrary streams to the Reader. Seeds live in
// testdata/fuzz/FuzzReadMessage. Whatever the input, reading must not
// panic, and what it accepts must be self-consistent: valid BSON, lengths
// inside the input, a command equal to what the reference decoder gives,
// and a re-encoding that reads back the same.
func FuzzReadMessage(f *testing.F) {
	codec := NewCodec(allCompressors...)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzlimit.Run(t, func() {
			r := NewReader(bytes.NewReader(data), codec)
			consumed := 0
			for range 4 {
				m, err := r.ReadMessage()
				if err != nil {
					checkReadError(t, err)
					return
				}
				consumed += int(m.Header.MessageLength)
				if consumed > len(data) {
					t.Fatalf("read %d bytes from %d of input", consumed, len(data))
				}
				checkMessage(t, m)
			}
		}, data)
	})
}

func checkReadError(t *testing.T, err error) {
	var we *Error
	if !errors.As(err, &we) {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		return
	}
	if we.Code == 0 || we.Msg == "" {
		t.Fatalf("error without code or message: %+v", we)
	}
	if !we.Fatal && !we.Consumed {
		t.Fatalf("non-fatal error left the stream misaligned: %v", we)
	}
}

func checkMessage(t *testing.T, m *Message) {
	if m.OpCode != OpMsg && m.OpCode != OpQuery {
		t.Fatalf("accepted opcode %v", m.OpCode)
	}
	if m.Header.MessageLength < HeaderSize || m.Header.MessageLength > MaxMessageSize {
		t.Fatalf("accepted length %d", m.Header.MessageLength)
	}
	if err := m.Body.Validate(); err != nil {
		t.Fatalf("accepted invalid body: %v", err)
	}
	for _, s := range m.Sequences {
		for _, d := range s.Docs {
			if err := d.Validate(); err != nil {
				t.Fatalf("accepted invalid sequence document: %v", err)
			}
		}
	}
	checkCommand(t, m)
	if m.OpCode == OpMsg {
		checkReencode(t, m)
	}
}

// checkCommand compares Command with bson.Unmarshal of the body.
func checkCommand(t *testing.T, m *Message) {
	cmd, err := m.Command()
	var ref bson.D
	refErr := bson.Unmarshal(m.Body, &ref)
	if err != nil || refErr != nil {
		if len(m.Sequences) == 0 && (err == nil) != (refErr == nil) {
			t.Fatalf("Command error %v, reference error %v", err, refErr)
		}
		return
	}
	got, err1 := bson.Marshal(cmd[:len(ref)])
	want, err2 := bson.Marshal(ref)
	if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
		t.Fatalf("Command body differs from reference:\n got %v\nwant %v", cmd[:len(ref)], ref)
	}
	if len(cmd) != len(ref)+len(m.Sequences) {
		t.Fatalf("command has %d fields, want %d", len(cmd), len(ref)+len(m.Sequences))
	}
}

func checkReencode(t *testing.T, m *Message) {
	b := AppendMsg(nil, m.Header.RequestID, 0, m.Flags&^FlagChecksumPresent, m.Body, m.Sequences...)
	again, err := ReadMessage(bytes.NewReader(b), nil)
	if err != nil {
		t.Fatalf("re-encoded message rejected: %v", err)
	}
	if !bytes.Equal(again.Body, m.Body) || len(again.Sequences) != len(m.Sequences) {
		t.Fatal("re-encoded message differs")
	}
	for i, s := range m.Sequences {
		if again.Sequences[i].Identifier != s.Identifier || len(again.Sequences[i].Docs) != len(s.Docs) {
			t.Fatalf("sequence %d differs after re-encoding", i)
		}
	}
}
