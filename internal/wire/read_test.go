package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func TestReadOpMsgWithSequences(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}})
	d1 := mustDoc(t, bson.D{{Key: "_id", Value: int32(1)}})
	d2 := mustDoc(t, bson.D{{Key: "_id", Value: int32(2)}})
	u := mustDoc(t, bson.D{{Key: "q", Value: bson.D{}}})
	// Sections may come in any order; the body need not be first.
	b := rawMsg(FlagExhaustAllowed|1<<20, kind1("documents", d1, d2), kind0(body), kind1("other", u))
	m, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.OpCode != OpMsg || m.Header.MessageLength != int32(len(b)) || m.Header.RequestID != 1 {
		t.Fatalf("header/opcode wrong: %+v %v", m.Header, m.OpCode)
	}
	if m.Flags != FlagExhaustAllowed|1<<20 || m.MoreToCome() {
		t.Fatalf("flags %b", m.Flags)
	}
	if !bytes.Equal(m.Body, body) {
		t.Fatalf("body %v", m.Body)
	}
	if len(m.Sequences) != 2 || m.Sequences[0].Identifier != "documents" || len(m.Sequences[0].Docs) != 2 ||
		!bytes.Equal(m.Sequences[0].Docs[1], d2) || m.Sequences[1].Identifier != "other" {
		t.Fatalf("sequences %+v", m.Sequences)
	}
	cmd, err := m.Command()
	if err != nil {
		t.Fatal(err)
	}
	want := bson.D{
		{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"},
		{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: int32(1)}}, bson.D{{Key: "_id", Value: int32(2)}}}},
		{Key: "other", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}}}},
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Fatalf("command\n got %v\nwant %v", cmd, want)
	}
}

func TestReadMoreToComeAndEmptySequence(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}})
	m, err := readAll(rawMsg(FlagMoreToCome, kind0(body), kind1("documents")))
	if err != nil {
		t.Fatal(err)
	}
	if !m.MoreToCome() {
		t.Fatal("moreToCome not reported")
	}
	cmd, err := m.Command()
	if err != nil {
		t.Fatal(err)
	}
	if got := cmd[len(cmd)-1]; got.Key != "documents" || len(got.Value.(bson.A)) != 0 {
		t.Fatalf("empty sequence became %v", got)
	}
}

func TestReadChecksum(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	b := AppendMsg(nil, 5, 0, FlagChecksumPresent, body)
	// The appended checksum is the CRC-32C of everything before it.
	if got, want := binary.LittleEndian.Uint32(b[len(b)-4:]), crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)); got != want {
		t.Fatalf("AppendMsg checksum %x, want %x", got, want)
	}
	m, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Body, body) {
		t.Fatal("body includes checksum bytes")
	}
}

func TestReadOpQuery(t *testing.T) {
	inner := bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}}
	rp := bson.D{{Key: "mode", Value: "secondaryPreferred"}}
	for _, tc := range []struct {
		name   string
		query  bson.D
		wantRP bool
	}{
		{"plain", inner, false},
		{"wrapped", bson.D{{Key: "$query", Value: inner}, {Key: "$readPreference", Value: rp}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := mustDoc(t, tc.query)
			b := AppendQuery(nil, 9, "admin.$cmd", q)
			m, err := readAll(b)
			if err != nil {
				t.Fatal(err)
			}
			if m.OpCode != OpQuery || m.Query == nil || m.Query.FullCollectionName != "admin.$cmd" ||
				m.Query.NumberToReturn != -1 || !bytes.Equal(m.Query.Query, q) {
				t.Fatalf("query fields %+v", m.Query)
			}
			if !bytes.Equal(m.Body, mustDoc(t, inner)) {
				t.Fatalf("body not unwrapped: %v", m.Body)
			}
			if got := m.Query.ReadPreference.Type != 0; got != tc.wantRP {
				t.Fatalf("readPreference present %v, want %v", got, tc.wantRP)
			}
		})
	}
}

func TestReadOpQueryWithSelector(t *testing.T) {
	q := mustDoc(t, bson.D{{Key: "ismaster", Value: 1}})
	sel := mustDoc(t, bson.D{{Key: "x", Value: 1}})
	b := AppendQuery(nil, 9, "admin.$cmd", q)
	b = append(b, sel...)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	m, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Query.ReturnFieldsSelector, sel) {
		t.Fatalf("selector %v", m.Query.ReturnFieldsSelector)
	}
}

func TestReadIOErrors(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}})
	full := rawMsg(0, kind0(body))
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty stream", nil, io.EOF},
		{"short header", full[:10], io.ErrUnexpectedEOF},
		{"truncated body", full[:len(full)-3], io.ErrUnexpectedEOF},
		{"header only", full[:HeaderSize], io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(tc.in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var we *Error
			if errors.As(err, &we) {
				t.Fatalf("I/O error reported as malformed message: %v", err)
			}
		})
	}
}

// malformedCase is a message that must be rejected with code, and whether
// the connection must be dropped (fatal) and whether the bytes were
// consumed (so the stream is still aligned).
type malformedCase struct {
	name     string
	in       []byte
	code     mongoerr.Code
	fatal    bool
	consumed bool
}

func malformedCases(t *testing.T) []malformedCase {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	doc := mustDoc(t, bson.D{{Key: "a", Value: 1}})
	badBSON := []byte{12, 0, 0, 0, 0x77, 'a', 0, 1, 2, 3, 4, 0} // unknown element type
	withLen := func(n int32) []byte {
		b := rawMsg(0, kind0(body))
		binary.LittleEndian.PutUint32(b, uint32(n))
		return b
	}
	badSum := AppendMsg(nil, 1, 0, FlagChecksumPresent, body)
	badSum[len(badSum)-1] ^= 0xff
	flipped := AppendMsg(nil, 1, 0, FlagChecksumPresent, body)
	flipped[HeaderSize+8] ^= 0x01 // corrupt the body, keep the checksum
	shortMsg := rawMsg(0)[:HeaderSize+2]
	putHeader(shortMsg, Header{HeaderSize + 2, 1, 0, OpMsg})
	unknownOp := rawMsg(0, kind0(body))
	binary.LittleEndian.PutUint32(unknownOp[12:], 2002)
	truncatedSeq := kind1("documents", doc)
	binary.LittleEndian.PutUint32(truncatedSeq[1:], uint32(len(truncatedSeq)+10))
	docOverrunsSeq := kind1("documents", doc)
	binary.LittleEndian.PutUint32(docOverrunsSeq[1+4+len("documents")+1:], 200)
	return []malformedCase{
		{"length below header", withLen(8), mongoerr.ProtocolError, true, false},
		{"negative length", withLen(-5), mongoerr.ProtocolError, true, false},
		{"oversized message", withLen(MaxMessageSize + 1), mongoerr.ProtocolError, true, false},
		{"unsupported opcode", unknownOp, mongoerr.ProtocolError, true, false},
		{"no room for flags", shortMsg, mongoerr.ProtocolError, true, true},
		{"unknown required flag", rawMsg(1<<2, kind0(body)), mongoerr.IllegalOpMsgFlag, true, true},
		{"unknown required flag bit 15", rawMsg(1<<15, kind0(body)), mongoerr.IllegalOpMsgFlag, true, true},
		{"bad checksum", badSum, 288, true, true},
		{"corrupted body under checksum", flipped, 288, true, true},
		{"checksum flag without room", rawMsg(FlagChecksumPresent, []byte{0, 0, 0, 0}), 51251, true, true},
		{"bad section kind", rawMsg(0, kind0(body), []byte{2, 5, 0, 0, 0, 0}), 40432, true, true},
		{"bad section kind 7", rawMsg(0, []byte{7}, kind0(body)), 40432, true, true},
		{"kind-0 length overruns", rawMsg(0, kind0(body)[:len(body)-2]), mongoerr.ProtocolError, true, true},
		{"kind-0 length too small", rawMsg(0, []byte{0, 4, 0, 0, 0}), mongoerr.ProtocolError, true, true},
		{"kind-0 truncated length", rawMsg(0, []byte{0, 5, 0}), mongoerr.ProtocolError, true, true},
		{"truncated kind-1", rawMsg(0, kind0(body), truncatedSeq), mongoerr.ProtocolError, true, true},
		{"kind-1 size too small", rawMsg(0, kind0(body), []byte{1, 4, 0, 0, 0}), mongoerr.ProtocolError, true, true},
		{"kind-1 missing size", rawMsg(0, kind0(body), []byte{1, 9, 0}), mongoerr.ProtocolError, true, true},
		{"kind-1 unterminated identifier", rawMsg(0, kind0(body), append([]byte{1}, append(le32(7), 'a', 'b', 'c')...)), mongoerr.ProtocolError, true, true},
		{"kind-1 document overruns section", rawMsg(0, kind0(body), docOverrunsSeq), mongoerr.ProtocolError, true, true},
		{"duplicate identifier", rawMsg(0, kind0(body), kind1("documents", doc), kind1("documents", doc)), 40431, false, true},
		{"two kind-0", rawMsg(0, kind0(body), kind0(body)), 40430, false, true},
		{"no kind-0", rawMsg(0, kind1("documents", doc)), 40587, false, true},
		{"no sections", rawMsg(0), 40587, false, true},
		{"invalid BSON body", rawMsg(0, kind0(badBSON)), mongoerr.InvalidBSON, false, true},
		{"invalid BSON in sequence", rawMsg(0, kind0(body), kind1("documents", badBSON)), mongoerr.InvalidBSON, false, true},
		{"framing beats bad BSON", rawMsg(0, kind0(badBSON), []byte{9}), 40432, true, true},
		{"query unterminated namespace", queryRaw([]byte("admin.$cmd")), mongoerr.ProtocolError, true, true},
		{"query truncated counts", queryRaw([]byte("admin.$cmd\x00\x00\x00")), mongoerr.ProtocolError, true, true},
		{"query missing document", queryRaw(append([]byte("a.$cmd\x00"), make([]byte, 8)...)), mongoerr.ProtocolError, true, true},
		{"query trailing bytes", queryRaw(append(append(append([]byte("a.$cmd\x00"), make([]byte, 8)...), doc...), append(append([]byte{}, doc...), 1, 2)...)), mongoerr.ProtocolError, true, true},
		{"query invalid BSON", queryRaw(append(append([]byte("a.$cmd\x00"), make([]byte, 8)...), badBSON...)), mongoerr.InvalidBSON, false, true},
	}
}

// queryRaw builds an OP_QUERY from the bytes after its flags.
func queryRaw(rest []byte) []byte {
	b := make([]byte, HeaderSize+4, 64)
	b = append(b, rest...)
	putHeader(b, Header{int32(len(b)), 3, 0, OpQuery})
	return b
}

func TestReadMalformed(t *testing.T) {
	next := mustDoc(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	follow := AppendMsg(nil, 99, 0, 0, next)
	for _, tc := range malformedCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			stream := append(append([]byte{}, tc.in...), follow...)
			r := NewReader(bytes.NewReader(stream), NewCodec(allCompressors...))
			_, err := r.ReadMessage()
			we := wantWireErr(t, err, tc.code, tc.fatal, tc.consumed)
			if we.Header.MessageLength != int32(binary.LittleEndian.Uint32(tc.in)) {
				t.Fatalf("error carries header %+v", we.Header)
			}
			if tc.consumed {
				// The stream stays aligned: the next message reads cleanly.
				m, err := r.ReadMessage()
				if err != nil || m.Header.RequestID != 99 {
					t.Fatalf("next message after %s: %v", tc.name, err)
				}
			}
		})
	}
}

func TestReadOversizedDoesNotAllocate(t *testing.T) {
	hdr := make([]byte, HeaderSize)
	putHeader(hdr, Header{MaxMessageSize + 1, 1, 0, OpMsg})
	r := NewReader(bytes.NewReader(hdr), nil)
	allocs := testing.AllocsPerRun(1, func() {
		r = NewReader(bytes.NewReader(hdr), nil)
		_, _ = r.ReadMessage()
	})
	if cap(r.buf) != 0 || allocs > 10 {
		t.Fatalf("allocated %d bytes (%v allocs) for a rejected message", cap(r.buf), allocs)
	}
	// A legal but huge length must not be allocated up front either
	// unless the bytes come: here they do not, and the read fails.
	putHeader(hdr, Header{MaxMessageSize, 1, 0, OpMsg})
	r = NewReader(bytes.NewReader(append(hdr, make([]byte, 1000)...)), nil)
	if _, err := r.ReadMessage(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated huge message: %v", err)
	}
	if cap(r.buf) > 1<<20 {
		t.Fatalf("committed %d bytes for 1016 bytes received", cap(r.buf))
	}
}

func TestReadOptionalHighFlagIgnored(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "ping", Value: 1}})
	if _, err := readAll(rawMsg(1<<31|FlagExhaustAllowed, kind0(body))); err != nil {
		t.Fatalf("unknown optional flag rejected: %v", err)
	}
}

func TestReaderReusesBuffers(t *testing.T) {
	var stream []byte
	for i := range 3 {
		body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "i", Value: int32(i)}})
		stream = AppendMsg(stream, int32(i), 0, 0, body, Sequence{Identifier: "documents", Docs: []bson.Raw{body, body}})
	}
	r := NewReader(bytes.NewReader(stream), nil)
	for i := range 3 {
		m, err := r.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := m.Command()
		if err != nil {
			t.Fatal(err)
		}
		if cmd[1].Value != int32(i) || len(m.Sequences) != 1 || len(m.Sequences[0].Docs) != 2 {
			t.Fatalf("message %d decoded as %v (%d sequences)", i, cmd, len(m.Sequences))
		}
	}
	if _, err := r.ReadMessage(); !errors.Is(err, io.EOF) {
		t.Fatalf("end of stream: %v", err)
	}
}

func TestCommandDuplicateField(t *testing.T) {
	body := mustDoc(t, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{}}})
	m, err := readAll(rawMsg(0, kind0(body), kind1("documents", mustDoc(t, bson.D{}))))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Command()
	if me := mongoerr.As(err); me == nil || me.Code != 40433 || !strings.Contains(me.Msg, "documents") {
		t.Fatalf("got %v, want 40433", err)
	}
}

// The decoded command must not alias the reader's buffer, which the next
// message overwrites.
func TestCommandDoesNotAliasBuffer(t *testing.T) {
	body := mustDoc(t, bson.D{
		{Key: "s", Value: "hello"},
		{Key: "b", Value: bson.Binary{Subtype: 0, Data: []byte("bytes")}},
		{Key: "n", Value: bson.D{{Key: "k", Value: "nested"}}},
	})
	buf := rawMsg(0, kind0(body))
	m, err := readAll(buf)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := m.Command()
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Body {
		m.Body[i] = 'X'
	}
	want := bson.D{
		{Key: "s", Value: "hello"},
		{Key: "b", Value: bson.Binary{Subtype: 0, Data: []byte("bytes")}},
		{Key: "n", Value: bson.D{{Key: "k", Value: "nested"}}},
	}
	if !reflect.DeepEqual(cmd, want) {
		t.Fatalf("command changed with the buffer: %v", cmd)
	}
}

// Every way of decoding a document, copying each string, cutting them
// from a command's shared text, and a stored document's own
// (bsonutil.DecodeShared), must give exactly what bson.Unmarshal gives,
// for every type.
func TestDecodeDocMatchesUnmarshal(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			testDecodeMatchesUnmarshal(t, func(raw bson.Raw) (bson.D, error) { return decodeDocWith(raw, shared) })
		})
	}
	t.Run("DecodeShared", func(t *testing.T) {
		testDecodeMatchesUnmarshal(t, func(raw bson.Raw) (bson.D, error) { return bsonutil.DecodeShared(raw, 0) })
	})
}

// decodeDocWith decodes raw alone, as a command's only document.
func decodeDocWith(raw bson.Raw, shared bool) (bson.D, error) {
	var dec commandDecoder
	if shared {
		dec.share(&Message{Body: raw}, len(raw))
	}
	return dec.decode(raw, 0)
}

func testDecodeMatchesUnmarshal(t *testing.T, decodeDoc func(bson.Raw) (bson.D, error)) {
	oid := bson.NewObjectID()
	dec, _ := bson.ParseDecimal128("1.5")
	doc := mustDoc(t, bson.D{
		{Key: "double", Value: 1.5},
		{Key: "string", Value: "s"},
		{Key: "doc", Value: bson.D{{Key: "x", Value: bson.A{int32(1), "two", bson.D{}}}}},
		{Key: "array", Value: bson.A{}},
		{Key: "bin", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}},
		{Key: "oldbin", Value: bson.Binary{Subtype: 2, Data: []byte{1, 2, 3}}},
		{Key: "undef", Value: bson.Undefined{}},
		{Key: "oid", Value: oid},
		{Key: "bool", Value: true},
		{Key: "date", Value: bson.DateTime(1234)},
		{Key: "null", Value: nil},
		{Key: "regex", Value: bson.Regex{Pattern: "^a", Options: "mi"}},
		{Key: "dbptr", Value: bson.DBPointer{DB: "db.c", Pointer: oid}},
		{Key: "js", Value: bson.JavaScript("x")},
		{Key: "sym", Value: bson.Symbol("y")},
		{Key: "cws", Value: bson.CodeWithScope{Code: "z", Scope: bson.D{{Key: "a", Value: int32(1)}}}},
		{Key: "int32", Value: int32(7)},
		{Key: "ts", Value: bson.Timestamp{T: 1, I: 2}},
		{Key: "int64", Value: int64(8)},
		{Key: "bigint32", Value: int32(-1 << 20)},
		{Key: "bigint64", Value: int64(1) << 40},
		{Key: "zerodouble", Value: 0.0},
		{Key: "emptystring", Value: ""},
		{Key: "olddate", Value: bson.DateTime(-1)},
		{Key: "dec", Value: dec},
		{Key: "min", Value: bson.MinKey{}},
		{Key: "max", Value: bson.MaxKey{}},
	})
	elems, err := doc.Elements()
	if err != nil {
		t.Fatal(err)
	}
	checkEveryBSONType(t, elems)
	for _, e := range elems {
		single := mustDoc(t, bson.D{{Key: e.Key(), Value: e.Value()}})
		var want bson.D
		if err := bson.Unmarshal(single, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeDoc(single)
		if err != nil {
			t.Fatalf("%s: %v", e.Key(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", e.Key(), got, want)
		}
	}
	var want bson.D
	if err := bson.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	got, err := decodeDoc(doc)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("whole document: %v\n got %#v\nwant %#v", err, got, want)
	}
}

// checkEveryBSONType fails unless elems hold a value of every type the
// BSON specification defines.
func checkEveryBSONType(t *testing.T, elems []bson.RawElement) {
	t.Helper()
	seen := map[bson.Type]bool{}
	for _, e := range elems {
		seen[e.Value().Type] = true
	}
	for _, typ := range []bson.Type{
		bson.TypeDouble, bson.TypeString, bson.TypeEmbeddedDocument, bson.TypeArray, bson.TypeBinary,
		bson.TypeUndefined, bson.TypeObjectID, bson.TypeBoolean, bson.TypeDateTime, bson.TypeNull,
		bson.TypeRegex, bson.TypeDBPointer, bson.TypeJavaScript, bson.TypeSymbol, bson.TypeCodeWithScope,
		bson.TypeInt32, bson.TypeTimestamp, bson.TypeInt64, bson.TypeDecimal128, bson.TypeMinKey, bson.TypeMaxKey,
	} {
		if !seen[typ] {
			t.Errorf("the decoding table has no %s value", typ)
		}
	}
}

// nested returns a document nested depth levels deep: {a: {a: ... {}}}.
func nested(depth int) []byte {
	b := make([]byte, 0, 5+8*depth)
	for k := depth; k > 0; k-- { // outermost first; level k has length 5+8k
		b = binary.LittleEndian.AppendUint32(b, uint32(5+8*k))
		b = append(b, 0x03, 'a', 0)
	}
	b = append(b, 5, 0, 0, 0, 0)
	return append(b, make([]byte, depth)...)
}

// Deep nesting must be refused before any recursive walk can exhaust the
// stack (which would kill the whole process, not just the connection).
func TestReadNestingDepth(t *testing.T) {
	if _, err := readAll(rawMsg(0, kind0(nested(MaxNestingDepth)))); err != nil {
		t.Fatalf("depth %d rejected: %v", MaxNestingDepth, err)
	}
	for _, depth := range []int{MaxNestingDepth + 1, 1_000_000} {
		_, err := readAll(rawMsg(0, kind0(nested(depth))))
		wantWireErr(t, err, mongoerr.Overflow, false, true)
	}
}

// Validation is stricter than bson.Raw.Validate where the reference
// decoder would fail later.
func TestReadRejectsSubtleBSON(t *testing.T) {
	for name, doc := range map[string][]byte{
		"string without NUL":    {0x0e, 0, 0, 0, 0x02, 'a', 0, 2, 0, 0, 0, 'x', 'y', 0},
		"zero-length string":    {0x0e, 0, 0, 0, 0x02, 'a', 0, 0, 0, 0, 0, 0, 0, 0},
		"boolean byte 2":        {0x09, 0, 0, 0, 0x08, 'a', 0, 2, 0},
		"garbage element":       {0x0a, 0, 0, 0, 0x08, 'a', 0, 1, 1, 0},
		"unterminated key":      {0x07, 0, 0, 0, 0x0A, 'a', 0},
		"negative binary":       {0x0f, 0, 0, 0, 0x05, 'a', 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"old binary bad length": {0x13, 0, 0, 0, 0x05, 'a', 0, 5, 0, 0, 0, 2, 9, 0, 0, 0, 'z', 0, 0},
	} {
		_, err := readAll(rawMsg(0, kind0(doc)))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		t.Run(name, func(t *testing.T) { wantWireErr(t, err, mongoerr.InvalidBSON, false, true) })
	}
}
