package commands

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cursor"
	"github.com/mayflydb/mayfly/internal/docstore"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// noAuthUID is how mongod shows the user part of a session id when no one
// is authenticated: the SHA-256 of the empty user name, in base64.
const noAuthUID = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

// track remembers a scan that a cursor made from this request must bring
// up to date before each getMore.
func (r *request) track(scan *docstore.DocIter) {
	if scan != nil {
		r.scans = append(r.scans, scan)
	}
}

// sessionID is the request's lsid.id, or nil outside a session.
func sessionID(r *request) []byte {
	v, _ := bsonutil.Field(r.body, "lsid")
	d, _ := v.(bson.D)
	id, _ := bsonutil.Field(d, "id")
	if b, ok := id.(bson.Binary); ok {
		return b.Data
	}
	return nil
}

// attachRequest binds a new cursor to the request's session and scans.
func attachRequest(r *request, p *peekSource) {
	p.lsid = sessionID(r)
	p.scans = r.scans
	p.sorted = r.sorted
	p.live = r.live
}

// checkSession applies mongod's rule: a cursor is used only in the session
// that opened it, and one opened outside a session only outside one.
func checkSession(r *request, id int64, p *peekSource) error {
	cur := sessionID(r)
	switch {
	case cur != nil && p.lsid == nil:
		return mongoerr.Newf(mongoerr.Location50736, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", id, formatLSID(cur))
	case cur == nil && p.lsid != nil:
		return mongoerr.Newf(mongoerr.Location50737, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", id, formatLSID(p.lsid))
	case !bytes.Equal(cur, p.lsid):
		return mongoerr.Newf(mongoerr.Location50738, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", id, formatLSID(p.lsid), formatLSID(cur))
	}
	return nil
}

func formatLSID(id []byte) string {
	return formatUUID(id) + " - " + noAuthUID + " -  - "
}

func formatUUID(b []byte) string {
	if len(b) != 16 {
		return hex.EncodeToString(b)
	}
	h := hex.EncodeToString(b)
	return fmt.Sprintf("%s-%s-%s-%s-%s", h[0:8], h[8:12], h[12:16], h[16:20], h[20:])
}

// reopen brings the cursor's scans up to the time of the getMore that
// continues it: documents deleted, expired or no longer matching since the
// last batch are not returned, and the one document read ahead for the
// last batch is dropped if it is one of them.
func (p *peekSource) reopen(ctx context.Context) error {
	if p.live != nil {
		p.live.set(ctx)
	}
	for _, s := range p.scans {
		live, err := s.Reopen(ctx)
		if err != nil {
			return err
		}
		if p.has && !live {
			p.has, p.pending = false, nil
		}
	}
	for _, u := range p.sorted {
		if p.has && u.lastExpired() {
			p.has, p.pending = false, nil
		}
	}
	return nil
}

// droppedError is mongod's answer to a getMore whose collection was
// dropped since the cursor's last batch.
func droppedError(err error) error {
	var de *docstore.DroppedError
	if errors.As(err, &de) {
		return mongoerr.Newf(mongoerr.QueryPlanKilled, "collection dropped. UUID %s", formatUUID(de.UUID.Data))
	}
	return err
}

// swapCtx is the context a cursor's pipeline and scans check: the command
// that runs them now. A cursor outlives the command that opened it (whose
// context ends when it returns), so each getMore puts its own in.
type swapCtx struct {
	cur atomic.Pointer[context.Context]
}

func newSwapCtx(ctx context.Context) *swapCtx {
	s := &swapCtx{}
	s.set(ctx)
	return s
}

func (s *swapCtx) set(ctx context.Context)     { s.cur.Store(&ctx) }
func (s *swapCtx) now() context.Context        { return *s.cur.Load() }
func (s *swapCtx) Deadline() (time.Time, bool) { return s.now().Deadline() }
func (s *swapCtx) Done() <-chan struct{}       { return s.now().Done() }
func (s *swapCtx) Err() error                  { return s.now().Err() }
func (s *swapCtx) Value(key any) any           { return s.now().Value(key) }

// cursorContext makes r's context one that getMore can replace, for a
// command that may open a cursor.
func cursorContext(r *request) {
	r.live = newSwapCtx(r.ctx)
	r.ctx = r.live
}

// unexpiredSource drops sorted results that have expired by the time they
// are returned: a blocking sort holds its documents past the scan that
// hid expired ones, and a getMore may come after they expire.
type unexpiredSource struct {
	src  cursor.Source
	c    *docstore.Collection
	last bson.D // the last document returned, for lastExpired
}

func (s *unexpiredSource) Next() (bson.D, bool, error) {
	for {
		d, ok, err := s.src.Next()
		if !ok || err != nil || !s.c.ExpiredNow(d) {
			s.last = d
			return d, ok, err
		}
	}
}

// lastExpired reports whether the document last returned (the one a
// batch read ahead) has expired since.
func (s *unexpiredSource) lastExpired() bool { return s.last != nil && s.c.ExpiredNow(s.last) }

func (s *unexpiredSource) Close() error { return s.src.Close() }
