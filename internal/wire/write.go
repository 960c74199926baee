package wire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
)

// Offsets inside the messages this package builds.
const (
	msgPrefix        = HeaderSize + 4 + 1 // header, flagBits, section kind 0
	replyPrefix      = HeaderSize + 4 + 8 + 4 + 4
	compressedPrefix = HeaderSize + 4 + 4 + 1
)

// AppendMsg appends an OP_MSG holding body as its kind-0 section followed
// by seqs as kind-1 sections. If flags has FlagChecksumPresent, the CRC-32C
// is appended too.
func AppendMsg(dst []byte, requestID, responseTo int32, flags uint32, body []byte, seqs ...Sequence) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = binary.LittleEndian.AppendUint32(dst, flags)
	dst = append(dst, 0)
	dst = append(dst, body...)
	for _, s := range seqs {
		dst = appendSequence(dst, s)
	}
	if flags&FlagChecksumPresent != 0 {
		n := len(dst) - start + 4
		putHeader(dst[start:], Header{int32(n), requestID, responseTo, OpMsg})
		dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
		return dst
	}
	putHeader(dst[start:], Header{int32(len(dst) - start), requestID, responseTo, OpMsg})
	return dst
}

func appendSequence(dst []byte, s Sequence) []byte {
	dst = append(dst, 1)
	sizeAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = append(dst, s.Identifier...)
	dst = append(dst, 0)
	for _, d := range s.Docs {
		dst = append(dst, d...)
	}
	binary.LittleEndian.PutUint32(dst[sizeAt:], uint32(len(dst)-sizeAt))
	return dst
}

// AppendQuery appends an OP_QUERY for a command on fullCollectionName
// ("<db>.$cmd"), as drivers send for the legacy handshake.
func AppendQuery(dst []byte, requestID int32, fullCollectionName string, query []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize+4)...)
	dst = append(dst, fullCollectionName...)
	dst = append(dst, 0)
	dst = binary.LittleEndian.AppendUint32(dst, 0)          // numberToSkip
	dst = binary.LittleEndian.AppendUint32(dst, 0xffffffff) // numberToReturn -1
	dst = append(dst, query...)
	putHeader(dst[start:], Header{int32(len(dst) - start), requestID, 0, OpQuery})
	return dst
}

// AppendReply appends an OP_REPLY carrying the single document doc, with
// responseFlags, cursorID and startingFrom zero.
func AppendReply(dst []byte, requestID, responseTo int32, doc []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, replyPrefix)...)
	binary.LittleEndian.PutUint32(dst[start+replyPrefix-4:], 1) // numberReturned
	dst = append(dst, doc...)
	putHeader(dst[start:], Header{int32(len(dst) - start), requestID, responseTo, OpReply})
	return dst
}

// Compress appends msg, a complete message, wrapped in OP_COMPRESSED with
// compressor id. The header's requestID and responseTo are kept.
func (c *Codec) Compress(dst, msg []byte, id CompressorID) ([]byte, error) {
	if len(msg) < HeaderSize {
		return nil, fmt.Errorf("wire: compress: message of %d bytes has no header", len(msg))
	}
	h := decodeHeader(msg)
	start := len(dst)
	dst = append(dst, make([]byte, compressedPrefix)...)
	dst, err := c.compress(id, dst, msg[HeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("wire: compress with %s: %w", id, err)
	}
	if len(dst)-start > MaxMessageSize {
		return nil, fmt.Errorf("wire: compressed message of %d bytes exceeds %d", len(dst)-start, MaxMessageSize)
	}
	out := dst[start:]
	putHeader(out, Header{int32(len(out)), h.RequestID, h.ResponseTo, OpCompressed})
	binary.LittleEndian.PutUint32(out[HeaderSize:], uint32(h.OpCode))
	binary.LittleEndian.PutUint32(out[HeaderSize+4:], uint32(len(msg)-HeaderSize))
	out[HeaderSize+8] = byte(id)
	return dst, nil
}

// Writer encodes replies and writes each as a single Write call, reusing
// its buffers. It is not safe for concurrent use.
type Writer struct {
	dst    io.Writer
	codec  *Codec
	nextID int32
	buf    []byte // the uncompressed message
	cbuf   []byte // the compressed message

	out    appendBuf // where the BSON encoder flushes documents
	enc    *bson.Encoder
	encMax int // largest document the encoder has buffered
}

// NewWriter returns a Writer on dst. codec may be nil if replies are never
// compressed.
func NewWriter(dst io.Writer, codec *Codec) *Writer {
	if codec == nil {
		codec = NewCodec()
	}
	return &Writer{dst: dst, codec: codec}
}

// WriteMsg writes doc (a bson.D, bson.Raw or anything bson.Marshal takes)
// as an OP_MSG reply to the request with ID responseTo.
func (w *Writer) WriteMsg(responseTo int32, doc any) error {
	if err := w.buildMsg(responseTo, doc); err != nil {
		return err
	}
	return w.flush(w.buf)
}

// WriteMsgD is WriteMsg for the reply shape handlers return, without
// boxing it into an interface (an allocation per reply).
func (w *Writer) WriteMsgD(responseTo int32, doc bson.D) error {
	w.buf = append(w.buf[:0], make([]byte, msgPrefix)...)
	if err := w.encodeD(doc); err != nil {
		return err
	}
	w.header(responseTo, OpMsg)
	return w.flush(w.buf)
}

// WriteMsgMoreToCome writes doc as an OP_MSG reply flagged moreToCome (one
// of a stream of replies) and returns the message's requestID, to which
// the next reply of the stream responds.
func (w *Writer) WriteMsgMoreToCome(responseTo int32, doc any) (int32, error) {
	if err := w.buildMsg(responseTo, doc); err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint32(w.buf[HeaderSize:], FlagMoreToCome)
	return w.nextID, w.flush(w.buf)
}

// WriteCompressedMsg is WriteMsg wrapped in OP_COMPRESSED using id.
func (w *Writer) WriteCompressedMsg(responseTo int32, doc any, id CompressorID) error {
	if err := w.buildMsg(responseTo, doc); err != nil {
		return err
	}
	out, err := w.codec.Compress(w.cbuf[:0], w.buf, id)
	if err != nil {
		return &EncodeError{err}
	}
	w.cbuf = out
	return w.flush(out)
}

// WriteReply writes doc as an OP_REPLY to the OP_QUERY with ID responseTo.
func (w *Writer) WriteReply(responseTo int32, doc any) error {
	w.buf = append(w.buf[:0], make([]byte, replyPrefix)...)
	if err := w.encode(doc); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(w.buf[replyPrefix-4:], 1) // numberReturned
	w.header(responseTo, OpReply)
	return w.flush(w.buf)
}

func (w *Writer) buildMsg(responseTo int32, doc any) error {
	w.buf = append(w.buf[:0], make([]byte, msgPrefix)...)
	if err := w.encode(doc); err != nil {
		return err
	}
	w.header(responseTo, OpMsg)
	return nil
}

func (w *Writer) header(responseTo int32, op OpCode) {
	w.nextID++
	putHeader(w.buf, Header{int32(len(w.buf)), w.nextID, responseTo, op})
}

// EncodeError reports a reply that could not be encoded; nothing was
// written, so the connection is still usable.
type EncodeError struct{ Err error }

func (e *EncodeError) Error() string { return "wire: encode reply: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *EncodeError) Unwrap() error { return e.Err }

// encode appends doc's BSON to w.buf.
func (w *Writer) encode(doc any) error {
	start := len(w.buf)
	switch d := doc.(type) {
	case bson.Raw:
		w.buf = append(w.buf, d...)
	case []byte:
		w.buf = append(w.buf, d...)
	case bson.D:
		return w.encodeD(d)
	default:
		if err := w.encodeValue(doc); err != nil {
			return err
		}
	}
	return w.checkEncoded(start)
}

// encodeD appends d's BSON to w.buf: most replies directly, those that
// hold a type bsonutil does not encode itself by the driver's encoder.
func (w *Writer) encodeD(d bson.D) error {
	start := len(w.buf)
	var ok bool
	if w.buf, ok = bsonutil.AppendD(w.buf, d); !ok {
		w.buf = w.buf[:start]
		if err := w.encodeValue(d); err != nil {
			return err
		}
	}
	return w.checkEncoded(start)
}

// checkEncoded bounds the reply appended to w.buf from start.
func (w *Writer) checkEncoded(start int) error {
	if n := len(w.buf); n > MaxMessageSize {
		w.buf = nil
		return &EncodeError{fmt.Errorf("reply of %d bytes exceeds %d", n, MaxMessageSize)}
	}
	if len(w.buf)-start < 5 {
		return &EncodeError{fmt.Errorf("reply of %d bytes is not a document", len(w.buf)-start)}
	}
	return nil
}

// encodeValue runs the BSON encoder, which flushes each finished document
// into w.out. The encoder keeps its own buffer, so it is rebuilt after a
// large document (to release the memory) or a failure (its state is then
// undefined).
func (w *Writer) encodeValue(doc any) error {
	if w.enc == nil || w.encMax > bigBuffer {
		w.enc = bson.NewEncoder(bson.NewDocumentWriter(&w.out))
		w.encMax = 0
	}
	w.out.b = w.buf
	start := len(w.buf)
	err := w.enc.Encode(doc)
	w.buf, w.out.b = w.out.b, nil
	if err != nil {
		w.enc = nil
		return &EncodeError{err}
	}
	w.encMax = max(w.encMax, len(w.buf)-start)
	return nil
}

// Release drops reply buffers above smallBuffer, so that a connection
// waiting for its next request does not keep the memory of a big reply,
// and returns how many bytes it dropped. Between the replies of one
// stream the buffers are kept.
func (w *Writer) Release() (dropped int) {
	dropped = dropBig(&w.buf) + dropBig(&w.cbuf)
	if w.encMax > smallBuffer {
		dropped += w.encMax
		w.enc, w.encMax = nil, 0
	}
	return dropped
}

// Held returns the bytes of buffer the Writer holds, its encoder's
// estimated by the largest document it encoded.
func (w *Writer) Held() int { return cap(w.buf) + cap(w.cbuf) + w.encMax }

func (w *Writer) flush(msg []byte) error {
	_, err := w.dst.Write(msg)
	if cap(w.buf) > bigBuffer {
		w.buf = nil
	}
	if cap(w.cbuf) > bigBuffer {
		w.cbuf = nil
	}
	if err != nil {
		return fmt.Errorf("wire: write reply: %w", err)
	}
	return nil
}
