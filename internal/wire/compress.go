package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// Codec holds the compression state shared by all connections of a server:
// which compressors are accepted, the zstd encoder (safe for concurrent
// use and too expensive to build per connection), idle zstd decoders and
// pools of zlib coders.
type Codec struct {
	accepted [4]bool

	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdErr  error
	// zstdDecs holds idle single-threaded decoders, at most one per
	// processor. A decoder keeps a reference to the last output it wrote,
	// so one that inflated a large message is closed instead of kept.
	zstdDecs chan *zstd.Decoder

	zlibReaders sync.Pool // *zlibReader
	zlibWriters sync.Pool // *zlibWriter
}

// NewCodec returns a Codec that accepts the given compressors; noop is
// always accepted since it compresses nothing.
func NewCodec(accepted ...CompressorID) *Codec {
	c := &Codec{zstdDecs: make(chan *zstd.Decoder, runtime.GOMAXPROCS(0))}
	c.accepted[CompressorNoop] = true
	for _, id := range accepted {
		if int(id) < len(c.accepted) {
			c.accepted[id] = true
		}
	}
	return c
}

// Accepts reports whether messages compressed with id are accepted.
func (c *Codec) Accepts(id CompressorID) bool {
	return int(id) < len(c.accepted) && c.accepted[id]
}

// zstdEncoder builds the zstd encoder on first use so servers that never
// see zstd pay nothing for it.
func (c *Codec) zstdEncoder() (*zstd.Encoder, error) {
	c.zstdOnce.Do(func() {
		c.zstdEnc, c.zstdErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(0),
			zstd.WithLowerEncoderMem(true))
	})
	return c.zstdEnc, c.zstdErr
}

// zstdDecoder returns an idle decoder, or a new one.
func (c *Codec) zstdDecoder() (*zstd.Decoder, error) {
	select {
	case d := <-c.zstdDecs:
		return d, nil
	default:
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderMaxMemory(MaxMessageSize),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderConcurrency(1))
}

// putZstdDecoder keeps d for reuse unless its last output was larger than
// a connection keeps between messages (the decoder still references it,
// so keeping d would pin what Reader.Release dropped) or enough decoders
// are idle already.
func (c *Codec) putZstdDecoder(d *zstd.Decoder, lastOutput int) {
	if lastOutput > smallBuffer {
		d.Close()
		return
	}
	select {
	case c.zstdDecs <- d:
	default:
		d.Close()
	}
}

type zlibReader struct {
	src bytes.Reader
	r   io.ReadCloser
}

type zlibWriter struct {
	dst appendBuf
	w   *zlib.Writer
}

var errSizeMismatch = errors.New("decompressed size does not match uncompressedSize")

// Upper bounds on expansion, so payloads claiming more are lies: deflate
// codes a 258-byte match in about 2 bits; a zstd block is at most 128 KiB
// and takes at least 4 bytes (an RLE block).
const (
	maxDeflateRatio = 1032
	maxZstdRatio    = 128 << 10 / 4
)

// checkClaimedSize rejects, before any memory is committed, an announced
// uncompressed size that src cannot possibly produce.
func checkClaimedSize(id CompressorID, src []byte, size int) error {
	switch id {
	case CompressorNoop:
		if len(src) != size {
			return errSizeMismatch
		}
	case CompressorSnappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return fmt.Errorf("snappy: %w", err)
		}
		if n != size {
			return errSizeMismatch
		}
	case CompressorZlib:
		if size > maxDeflateRatio*len(src)+1024 {
			return errSizeMismatch
		}
	case CompressorZstd:
		if size > maxZstdRatio*len(src) {
			return errSizeMismatch
		}
		// Drivers send one frame, whose header usually records its size.
		var h zstd.Header
		if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize != uint64(size) {
			return errSizeMismatch
		}
	}
	return nil
}

// decompress inflates src, compressed with id, into dst, which has exactly
// the announced uncompressed length; producing more or fewer bytes is an
// error.
func (c *Codec) decompress(id CompressorID, dst, src []byte) error {
	switch id {
	case CompressorNoop:
		if len(src) != len(dst) {
			return errSizeMismatch
		}
		copy(dst, src)
		return nil
	case CompressorSnappy:
		return snappyDecode(dst, src)
	case CompressorZlib:
		return c.zlibDecode(dst, src)
	case CompressorZstd:
		return c.zstdDecode(dst, src)
	}
	return fmt.Errorf("unknown compressor id %d", id)
}

func snappyDecode(dst, src []byte) error {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if n != len(dst) {
		return errSizeMismatch
	}
	out, err := snappy.Decode(dst, src)
	if err != nil {
		return fmt.Errorf("snappy: %w", err)
	}
	if len(out) != len(dst) {
		return errSizeMismatch
	}
	return nil
}

func (c *Codec) zlibDecode(dst, src []byte) (err error) {
	z, _ := c.zlibReaders.Get().(*zlibReader)
	if z == nil {
		z = &zlibReader{}
	}
	z.src.Reset(src)
	if z.r == nil {
		z.r, err = zlib.NewReader(&z.src)
	} else {
		err = z.r.(zlib.Resetter).Reset(&z.src, nil)
	}
	if err != nil {
		return fmt.Errorf("zlib: %w", err)
	}
	defer func() {
		z.src.Reset(nil)
		c.zlibReaders.Put(z)
	}()
	if _, err := io.ReadFull(z.r, dst); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return errSizeMismatch
		}
		return fmt.Errorf("zlib: %w", err)
	}
	// Reading past the announced size both detects surplus data and makes
	// the reader verify the stream's Adler-32 checksum.
	var one [1]byte
	n, err := z.r.Read(one[:])
	if n > 0 {
		return errSizeMismatch
	}
	if err != io.EOF {
		if err == nil {
			err = io.ErrNoProgress
		}
		return fmt.Errorf("zlib: %w", err)
	}
	return nil
}

func (c *Codec) zstdDecode(dst, src []byte) error {
	dec, err := c.zstdDecoder()
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	defer c.putZstdDecoder(dec, len(dst))
	// The cap limit makes the decoder refuse to grow past the announced
	// size, so a decompression bomb costs nothing.
	out, err := dec.DecodeAll(src, dst[:0:len(dst)])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return errSizeMismatch
		}
		return fmt.Errorf("zstd: %w", err)
	}
	if len(out) != len(dst) {
		return errSizeMismatch
	}
	return nil
}

// compress appends src compressed with id to dst.
func (c *Codec) compress(id CompressorID, dst, src []byte) ([]byte, error) {
	switch id {
	case CompressorNoop:
		return append(dst, src...), nil
	case CompressorSnappy:
		n := snappy.MaxEncodedLen(len(src))
		if n < 0 {
			return nil, errors.New("snappy: message too large")
		}
		dst = grow(dst, len(dst)+n)
		out := snappy.Encode(dst[len(dst)-n:], src)
		return dst[:len(dst)-n+len(out)], nil
	case CompressorZlib:
		return c.zlibEncode(dst, src)
	case CompressorZstd:
		enc, err := c.zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("unknown compressor id %d", id)
}

func (c *Codec) zlibEncode(dst, src []byte) ([]byte, error) {
	z, _ := c.zlibWriters.Get().(*zlibWriter)
	if z == nil {
		z = &zlibWriter{}
		// BestSpeed: replies are small and latency matters more than ratio.
		w, err := zlib.NewWriterLevel(&z.dst, zlib.BestSpeed)
		if err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
		z.w = w
	}
	z.dst.b = dst
	z.w.Reset(&z.dst)
	_, err := z.w.Write(src)
	if err == nil {
		err = z.w.Close()
	}
	out := z.dst.b
	z.dst.b = nil
	c.zlibWriters.Put(z)
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return out, nil
}

// appendBuf is an io.Writer that appends to a slice the caller owns.
type appendBuf struct{ b []byte }

func (a *appendBuf) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

// grow returns b extended to length n, reusing its array when possible.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}
