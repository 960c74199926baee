package changestream

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/aggregate"
	"github.com/mayflydb/mayfly/internal/clock"
)

// Streams is what the change streams of one server share: the change
// log's feed, its recent records decoded once for all (RecentLog), the
// events encoded once for all (eventCache), and the server's part (Host).
type Streams struct {
	feed   *Feed
	recent *RecentLog
	events *eventCache
	host   Host
	clock  clock.Clock
}

// Host is what a stream asks of the server it runs in.
type Host interface {
	// Current is the document of db.coll whose _id is id as a read sees
	// it now: nil when it is gone or expired (updateLookup).
	Current(db, coll string, id any) (bson.D, error)
	// EncodeEvent encodes an event for a reply, refusing one larger than
	// a reply may carry.
	EncodeEvent(d bson.D) ([]byte, error)
	// MaxEventBytes is the size of the largest event a reply may carry.
	MaxEventBytes() int
}

// Call is one command's part in reading a stream: the aggregate that
// opens it or a getMore that continues it.
type Call struct {
	Ctx context.Context
	// Env runs the stream's stages after $changeStream.
	Env aggregate.Env
	// Wait bounds how long an empty batch waits for changes (the
	// getMore's maxTimeMS).
	Wait time.Duration
	// Waiting marks the command as waiting for changes until the
	// returned func is called: an idle stream does not make the server
	// busy.
	Waiting func() (resume func())
}

// NewStreams returns the shared state of the streams that read feed.
func NewStreams(feed *Feed, host Host, clk clock.Clock) *Streams {
	return &Streams{feed: feed, recent: NewRecentLog(feed.Reader), events: newEventCache(), host: host, clock: clk}
}

// Open starts a stream of spec: after spec.After when it resumes, else
// after every change committed so far.
func (st *Streams) Open(spec *Spec) (*Stream, error) {
	c := &Stream{streams: st, spec: spec, pos: spec.After}
	if !spec.Resumed {
		var err error
		if c.pos, err = st.feed.Now(); err != nil {
			return nil, err
		}
	}
	c.pbrt = Token{Pos: c.pos}
	return c, nil
}

// Start opens a stream of spec for the aggregate call and reads its
// first batch of up to n events, never waiting: the log is turned on
// first (Feed.Record), and a resume point must still be in it
// (CheckResume).
func (st *Streams) Start(spec *Spec, call *Call, n int64) (*Stream, []bson.Raw, error) {
	if rec := st.feed.Record; rec != nil {
		if err := rec(); err != nil {
			return nil, nil, err
		}
	}
	if err := st.CheckResume(spec); err != nil {
		return nil, nil, err
	}
	s, err := st.Open(spec)
	if err != nil {
		return nil, nil, err
	}
	docs, err := s.Read(call, n)
	if err != nil {
		return nil, nil, err
	}
	return s, docs, nil
}

// Readers is the number of streams open as cursors (Stream.Join).
func (st *Streams) Readers() int64 { return st.recent.Readers() }
