package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// castagnoli is the CRC-32C table used by OP_MSG checksums; it is built
// once and only read afterwards.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Buffers above bigBuffer are dropped once a message below smallBuffer
// arrives, so one huge insert does not pin tens of megabytes to an idle
// connection for the rest of its life.
const (
	bigBuffer   = 4 << 20
	smallBuffer = 256 << 10
	growStep    = 64 << 10
	// maxReusedDocs caps the kind-1 document lists kept between messages.
	maxReusedDocs = 1024
)

// Message is one decoded request. Its byte slices alias the Reader's
// buffers and are valid only until the next ReadMessage call; Command
// returns a copy that outlives it.
type Message struct {
	// Header is the header as it arrived (opcode 2012 if compressed).
	Header Header
	// OpCode is the effective opcode: OpMsg or OpQuery.
	OpCode OpCode
	// Flags are the OP_MSG flag bits.
	Flags uint32
	// Body is the kind-0 section (OP_MSG) or the unwrapped query (OP_QUERY).
	Body bson.Raw
	// Sequences are the kind-1 sections in arrival order.
	Sequences []Sequence
	// Query holds the OP_QUERY fields; nil for OP_MSG.
	Query *QueryFields
	// Compressed reports that the message arrived as OP_COMPRESSED, and
	// Compressor with which compressor.
	Compressed bool
	Compressor CompressorID
}

// Sequence is a kind-1 OP_MSG section: a named run of documents.
type Sequence struct {
	Identifier string
	Docs       []bson.Raw
}

// QueryFields are the OP_QUERY fields besides the query document.
type QueryFields struct {
	Flags              int32
	FullCollectionName string
	NumberToSkip       int32
	NumberToReturn     int32
	// Query is the query document as sent, possibly {$query: ..., ...}.
	Query bson.Raw
	// ReturnFieldsSelector is the optional projection document.
	ReturnFieldsSelector bson.Raw
	// ReadPreference is the wrapper's $readPreference, if the query was
	// wrapped and had one.
	ReadPreference bson.RawValue
}

// MoreToCome reports whether the sender expects no reply.
func (m *Message) MoreToCome() bool { return m.OpCode == OpMsg && m.Flags&FlagMoreToCome != 0 }

// Reader reads messages from a stream, reusing its buffers between calls.
// It is not safe for concurrent use.
type Reader struct {
	src   io.Reader
	codec *Codec
	hdr   [HeaderSize]byte
	buf   []byte // the message as read
	dbuf  []byte // the decompressed message
	msg   Message
	query QueryFields
	seqs  []Sequence
}

// NewReader returns a Reader on src, which should be buffered (a
// *bufio.Reader) since the header and body are read separately. codec may
// be nil, in which case compressed messages are rejected.
func NewReader(src io.Reader, codec *Codec) *Reader {
	if codec == nil {
		codec = NewCodec()
	}
	return &Reader{src: src, codec: codec}
}

// Release drops buffers that a big message left behind, so that a
// connection waiting for its next request keeps at most 2*smallBuffer: a
// small compressed message may inflate to tens of megabytes. It returns how
// many bytes it dropped. The last Message read is invalid afterwards.
func (r *Reader) Release() (dropped int) {
	dropped = dropBig(&r.buf) + dropBig(&r.dbuf)
	// The decoded views alias the buffers; kept, they would pin them.
	r.msg, r.query = Message{}, QueryFields{}
	for i := range r.seqs[:cap(r.seqs)] {
		seq := &r.seqs[:cap(r.seqs)][i]
		clear(seq.Docs[:cap(seq.Docs)])
		seq.Docs = seq.Docs[:0]
	}
	return dropped
}

// dropBig forgets *b if it is larger than an idle connection keeps, and
// returns how many bytes that dropped.
func dropBig(b *[]byte) int {
	n := cap(*b)
	if n <= smallBuffer {
		return 0
	}
	*b = nil
	return n
}

// Held returns the bytes of buffer the Reader holds.
func (r *Reader) Held() int { return cap(r.buf) + cap(r.dbuf) }

// ReadMessage reads one message with a fresh Reader; convenient for tests
// and one-off use. codec may be nil.
func ReadMessage(src io.Reader, codec *Codec) (*Message, error) {
	return NewReader(src, codec).ReadMessage()
}

// ReadMessage reads and validates the next message. I/O errors are
// returned wrapped (io.EOF when the stream ends cleanly between messages);
// malformed messages yield an *Error. The returned Message is reused by the
// next call.
func (r *Reader) ReadMessage() (*Message, error) {
	if _, err := io.ReadFull(r.src, r.hdr[:]); err != nil {
		return nil, fmt.Errorf("wire: read header: %w", err)
	}
	h := decodeHeader(r.hdr[:])
	if h.MessageLength < HeaderSize || h.MessageLength > MaxMessageSize {
		return nil, &Error{Code: mongoerr.ProtocolError, Header: h, Fatal: true,
			Msg: fmt.Sprintf("message length %d is invalid (min %d, max %d)", h.MessageLength, HeaderSize, MaxMessageSize)}
	}
	switch h.OpCode {
	case OpMsg, OpQuery, OpCompressed:
	default:
		return nil, &Error{Code: mongoerr.ProtocolError, Header: h, Fatal: true,
			Msg: fmt.Sprintf("unsupported opcode %d", int32(h.OpCode))}
	}
	if h.OpCode != OpCompressed && cap(r.dbuf) > bigBuffer {
		r.dbuf = nil // the client stopped compressing; do not pin the memory
	}
	if err := r.readBody(int(h.MessageLength)); err != nil {
		return nil, fmt.Errorf("wire: read %s body of %d bytes: %w", h.OpCode, h.MessageLength, err)
	}
	r.msg = Message{Header: h, Sequences: r.seqs[:0]}
	if err := r.parse(&r.msg, r.buf); err != nil {
		return nil, err
	}
	r.seqs = r.msg.Sequences
	return &r.msg, nil
}

// readBody fills r.buf with the header and the rest of an n-byte message.
// Memory beyond what already arrived is committed in doubling steps, so a
// header that merely claims a huge length costs little.
func (r *Reader) readBody(n int) error {
	r.buf = reuse(r.buf, min(n, max(cap(r.buf), growStep)))
	copy(r.buf, r.hdr[:])
	have := HeaderSize
	for {
		k, err := io.ReadFull(r.src, r.buf[have:])
		have += k
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if have == n {
			return nil
		}
		r.buf = grow(r.buf, min(n, 2*len(r.buf)))
	}
}

// reuse returns a slice of length n, keeping b's array unless it is
// missing, too small, or much too big for the current message.
func reuse(b []byte, n int) []byte {
	if cap(b) < n || (cap(b) > bigBuffer && n < smallBuffer) {
		return make([]byte, n, max(n, 4096))
	}
	return b[:n]
}

// parse decodes the full message b (header included) into m.
func (r *Reader) parse(m *Message, b []byte) error {
	var err *Error
	switch m.Header.OpCode {
	case OpMsg:
		m.OpCode = OpMsg
		err = parseMsg(m, b)
	case OpQuery:
		m.OpCode = OpQuery
		r.query = QueryFields{}
		m.Query = &r.query
		err = parseQuery(m, b)
	case OpCompressed:
		err = r.parseCompressed(m, b)
	}
	if err != nil {
		err.Header = m.Header
		if err.OpCode == 0 {
			err.OpCode = m.OpCode
		}
		err.Flags = m.Flags
		err.Consumed = true
		return err
	}
	return nil
}

func fatalf(code mongoerr.Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Fatal: true}
}

func errorf(code mongoerr.Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// parseMsg decodes an OP_MSG. Framing problems (unknown flags, bad
// checksum, sections that do not add up) are fatal; problems inside
// well-delimited documents are not, but framing is still checked to the
// end first so the fatal verdict wins.
func parseMsg(m *Message, b []byte) *Error {
	if len(b) < HeaderSize+4 {
		return fatalf(mongoerr.ProtocolError, "OP_MSG of %d bytes is too short for its flags", len(b))
	}
	m.Flags = binary.LittleEndian.Uint32(b[HeaderSize:])
	if unknown := m.Flags & requiredFlagMask &^ knownFlags; unknown != 0 {
		return fatalf(mongoerr.IllegalOpMsgFlag, "Message contains illegal flags value: Ob%032b", m.Flags)
	}
	end := len(b)
	if m.Flags&FlagChecksumPresent != 0 {
		if end-HeaderSize-4 <= 4 {
			return fatalf(mongoerr.Location51251, "Invalid message size for an OpMsg containing a checksum")
		}
		end -= 4
		want := binary.LittleEndian.Uint32(b[end:])
		if got := crc32.Checksum(b[:end], castagnoli); got != want {
			return fatalf(mongoerr.ChecksumMismatch, "OP_MSG checksum does not match contents")
		}
	}
	return parseSections(m, b[HeaderSize+4:end])
}

func parseSections(m *Message, p []byte) *Error {
	var soft *Error // first non-fatal problem, reported if framing is sound
	haveBody := false
	for len(p) > 0 {
		kind := p[0]
		p = p[1:]
		switch kind {
		case 0:
			doc, rest, err := splitDoc(p)
			if err != nil {
				return err
			}
			p = rest
			if haveBody {
				soft = firstErr(soft, errorf(mongoerr.Location40430, "Multiple body sections in message"))
			}
			haveBody = true
			m.Body = doc
			soft = firstErr(soft, validate(doc))
		case 1:
			seq, rest, err := splitSequence(p, m.Sequences)
			if err != nil {
				return err
			}
			p = rest
			for _, s := range m.Sequences {
				if s.Identifier == seq.Identifier {
					soft = firstErr(soft, errorf(mongoerr.Location40431, "Duplicate document sequence: %s", seq.Identifier))
				}
			}
			for _, d := range seq.Docs {
				soft = firstErr(soft, validate(d))
			}
			m.Sequences = append(m.Sequences, seq)
		default:
			return fatalf(mongoerr.Location40432, "Unknown section kind %d", kind)
		}
	}
	if !haveBody {
		soft = firstErr(soft, errorf(mongoerr.Location40587, "OP_MSG messages must have a body"))
	}
	return soft
}

func firstErr(have, next *Error) *Error {
	if have != nil {
		return have
	}
	return next
}

// splitSequence cuts one kind-1 section off p. It reuses the Docs array of
// the sequence previously stored at the same position, if any.
func splitSequence(p []byte, prev []Sequence) (Sequence, []byte, *Error) {
	if len(p) < 4 {
		return Sequence{}, nil, fatalf(mongoerr.ProtocolError, "truncated document sequence size")
	}
	size := int64(int32(binary.LittleEndian.Uint32(p)))
	if size < 5 || size > int64(len(p)) {
		return Sequence{}, nil, fatalf(mongoerr.ProtocolError, "document sequence size %d is invalid (%d bytes left)", size, len(p))
	}
	sec, rest := p[4:size], p[size:]
	nul := bytes.IndexByte(sec, 0)
	if nul < 0 {
		return Sequence{}, nil, fatalf(mongoerr.ProtocolError, "document sequence identifier is not terminated")
	}
	seq := Sequence{Identifier: identifier(sec[:nul])}
	// Reuse the document list from an earlier message unless it is one of
	// the huge ones a big batch leaves behind.
	if n := len(prev); n < cap(prev) {
		if docs := prev[:n+1][n].Docs; cap(docs) <= maxReusedDocs {
			seq.Docs = docs[:0]
		}
	}
	for sec = sec[nul+1:]; len(sec) > 0; {
		doc, more, err := splitDoc(sec)
		if err != nil {
			return Sequence{}, nil, err
		}
		seq.Docs = append(seq.Docs, doc)
		sec = more
	}
	return seq, rest, nil
}

// identifier returns the section name, without allocating for the names
// drivers actually send.
func identifier(b []byte) string {
	switch string(b) {
	case "documents":
		return "documents"
	case "updates":
		return "updates"
	case "deletes":
		return "deletes"
	case "ops":
		return "ops"
	case "nsInfo":
		return "nsInfo"
	}
	return string(b)
}

// splitDoc cuts one BSON document off p, checking only that its length
// prefix fits; the content is validated separately.
func splitDoc(p []byte) (bson.Raw, []byte, *Error) {
	if len(p) < 4 {
		return nil, nil, fatalf(mongoerr.ProtocolError, "truncated document length (%d bytes left)", len(p))
	}
	n := int64(int32(binary.LittleEndian.Uint32(p)))
	if n < 5 || n > int64(len(p)) {
		return nil, nil, fatalf(mongoerr.ProtocolError, "document length %d is invalid (%d bytes left)", n, len(p))
	}
	return bson.Raw(p[:n:n]), p[n:], nil
}

func validate(doc bson.Raw) *Error {
	err := validateDoc(doc)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errTooDeep):
		// MongoDB's code and words, which drivers and users recognise.
		return &Error{Code: mongoerr.Overflow, Msg: "BSONObj exceeds maximum nested object depth", Err: err}
	}
	return &Error{Code: mongoerr.InvalidBSON, Msg: "invalid BSON document", Err: err}
}

// parseQuery decodes an OP_QUERY and unwraps {$query: ...}.
func parseQuery(m *Message, b []byte) *Error {
	q := m.Query
	p := b[HeaderSize:]
	if len(p) < 4 {
		return fatalf(mongoerr.ProtocolError, "OP_QUERY too short for its flags")
	}
	q.Flags = int32(binary.LittleEndian.Uint32(p))
	p = p[4:]
	nul := bytes.IndexByte(p, 0)
	if nul < 0 {
		return fatalf(mongoerr.ProtocolError, "OP_QUERY fullCollectionName is not terminated")
	}
	q.FullCollectionName = string(p[:nul])
	p = p[nul+1:]
	if len(p) < 8 {
		return fatalf(mongoerr.ProtocolError, "OP_QUERY too short for numberToSkip/numberToReturn")
	}
	q.NumberToSkip = int32(binary.LittleEndian.Uint32(p))
	q.NumberToReturn = int32(binary.LittleEndian.Uint32(p[4:]))
	doc, p, err := splitDoc(p[8:])
	if err != nil {
		return err
	}
	q.Query = doc
	if len(p) > 0 {
		if q.ReturnFieldsSelector, p, err = splitDoc(p); err != nil {
			return err
		}
		if len(p) > 0 {
			return fatalf(mongoerr.ProtocolError, "%d unexpected bytes after OP_QUERY documents", len(p))
		}
	}
	if err := validate(doc); err != nil {
		return err
	}
	if q.ReturnFieldsSelector != nil {
		if err := validate(q.ReturnFieldsSelector); err != nil {
			return err
		}
	}
	m.Body = doc
	if inner, ok := doc.Lookup("$query").DocumentOK(); ok {
		m.Body = inner
		q.ReadPreference = doc.Lookup("$readPreference")
	}
	return nil
}

// parseCompressed inflates an OP_COMPRESSED into r.dbuf, rebuilds the
// original header in front of it and parses the result. The checksum of a
// wrapped OP_MSG covers that rebuilt message, as the sender computed it
// before compressing.
func (r *Reader) parseCompressed(m *Message, b []byte) *Error {
	if len(b) < HeaderSize+9 {
		return fatalf(mongoerr.ProtocolError, "OP_COMPRESSED of %d bytes is too short", len(b))
	}
	orig := OpCode(int32(binary.LittleEndian.Uint32(b[HeaderSize:])))
	size := int64(int32(binary.LittleEndian.Uint32(b[HeaderSize+4:])))
	id := CompressorID(b[HeaderSize+8])
	m.OpCode = orig
	if orig != OpMsg && orig != OpQuery {
		return fatalf(mongoerr.ProtocolError, "OP_COMPRESSED cannot wrap opcode %d", int32(orig))
	}
	if size < 0 || size > MaxMessageSize-HeaderSize {
		return fatalf(mongoerr.ProtocolError, "OP_COMPRESSED uncompressedSize %d is invalid", size)
	}
	if !r.codec.Accepts(id) {
		return fatalf(mongoerr.ProtocolError, "compressor %s (id %d) is not enabled", id, uint8(id))
	}
	payload := b[HeaderSize+9:]
	err := checkClaimedSize(id, payload, int(size))
	if err == nil {
		r.dbuf = reuse(r.dbuf, HeaderSize+int(size))
		err = r.codec.decompress(id, r.dbuf[HeaderSize:], payload)
	}
	if err != nil {
		e := fatalf(mongoerr.ProtocolError, "cannot decompress %s message", id)
		e.Err = err
		return e
	}
	putHeader(r.dbuf, Header{
		MessageLength: int32(len(r.dbuf)),
		RequestID:     m.Header.RequestID,
		ResponseTo:    m.Header.ResponseTo,
		OpCode:        orig,
	})
	m.Compressed, m.Compressor = true, id
	if orig == OpMsg {
		return parseMsg(m, r.dbuf)
	}
	r.query = QueryFields{}
	m.Query = &r.query
	return parseQuery(m, r.dbuf)
}
