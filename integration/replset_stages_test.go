package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// failoverStages is when, after a kill of the primary, each stage of the
// failover was first seen: a surviving member naming a new leader in its
// hello (election), the new leader answering hello as a writable primary
// (its readiness to take writes), the clients' driver describing it as
// the primary (discovery), and the first acknowledged write.
type failoverStages struct {
	killed     int
	at         time.Time
	elected    time.Duration // 0: not seen
	writable   time.Duration
	primary    string
	termBefore int64 // the killed primary's term, from its electionId
	termAfter  int64 // the new primary's
}

// report is one line saying which stage took how long.
func (s failoverStages) report(discovered time.Time, ack time.Duration) string {
	disc := "not seen"
	if !discovered.IsZero() {
		disc = discovered.Sub(s.at).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("member %d killed; new leader named after %v, writable after %v (%s, term %d→%d), driver saw it after %s, first write acknowledged after %v",
		s.killed, s.elected.Round(time.Millisecond), s.writable.Round(time.Millisecond), s.primary, s.termBefore, s.termAfter, disc, ack.Round(time.Millisecond))
}

// stageWatch polls hello on every member with one direct client each.
type stageWatch struct {
	rs      *replSet
	clients []*mongo.Client
}

func newStageWatch(t *testing.T, rs *replSet) *stageWatch {
	w := &stageWatch{rs: rs}
	for _, a := range rs.addrs {
		w.clients = append(w.clients, quickClient(t, a, time.Second))
	}
	return w
}

// memberHello is what stageWatch reads of a hello reply.
type memberHello struct {
	IsWritablePrimary bool          `bson:"isWritablePrimary"`
	Primary           string        `bson:"primary"`
	ElectionID        bson.ObjectID `bson:"electionId"`
}

// follow polls the members other than killed every 20 ms until one is a
// writable primary or timeout passes.
func (w *stageWatch) follow(killed int, term int64, at time.Time, timeout time.Duration) failoverStages {
	s := failoverStages{killed: killed, at: at, termBefore: term, termAfter: -1}
	for time.Since(at) < timeout && s.writable == 0 {
		for i, c := range w.clients {
			if i != killed {
				w.note(&s, c, i)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// term is member i's term from its electionId (-1: not a primary now).
func (w *stageWatch) term(i int) int64 {
	h, err := helloOf(w.clients[i])
	if err != nil || !h.IsWritablePrimary {
		return -1
	}
	return termOf(h.ElectionID)
}

func helloOf(c *mongo.Client) (memberHello, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var h memberHello
	err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&h)
	return h, err
}

func (w *stageWatch) note(s *failoverStages, c *mongo.Client, member int) {
	h, err := helloOf(c)
	if err != nil {
		return
	}
	since := time.Since(s.at)
	if s.elected == 0 && h.Primary != "" && h.Primary != w.rs.addrs[s.killed] {
		s.elected = since
	}
	if h.IsWritablePrimary && s.writable == 0 {
		s.writable, s.primary = since, fmt.Sprintf("member %d", member)
		s.termAfter = termOf(h.ElectionID)
		if s.elected == 0 {
			s.elected = since
		}
	}
}

// termOf reads the term from an electionId (7fffffff then the term).
func termOf(id bson.ObjectID) int64 {
	var term int64
	for _, b := range id[4:] {
		term = term<<8 | int64(b)
	}
	return term
}

// primarySightings records each time the driver described a server as the
// replica set's primary.
type primarySightings struct {
	mu  sync.Mutex
	all []primarySighting
}

type primarySighting struct {
	addr string
	at   time.Time
}

func (p *primarySightings) monitor() *event.ServerMonitor {
	return &event.ServerMonitor{ServerDescriptionChanged: func(e *event.ServerDescriptionChangedEvent) {
		if e.NewDescription.Kind != "RSPrimary" {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.all = append(p.all, primarySighting{addr: e.Address.String(), at: time.Now()})
	}}
}

// firstPrimaryAfter is when the driver first described a server other
// than old as the primary after at (zero: not yet).
func (p *primarySightings) firstPrimaryAfter(old string, at time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.all {
		if s.at.After(at) && s.addr != old {
			return s.at
		}
	}
	return time.Time{}
}

// ackedWrites records when each member last acknowledged a write of the
// load's client: an insert or update answered without a write error or
// write concern error. Kept per member, so that a reply the killed member
// sent just before it died, read by the client just after the kill, is
// not taken for writes resuming.
type ackedWrites struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func newAckedWrites() *ackedWrites { return &ackedWrites{last: map[string]time.Time{}} }

func (a *ackedWrites) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
		if e.CommandName != "insert" && e.CommandName != "update" {
			return
		}
		if _, err := e.Reply.LookupErr("writeErrors"); err == nil {
			return
		}
		if _, err := e.Reply.LookupErr("writeConcernError"); err == nil {
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		addr, _, _ := strings.Cut(e.ConnectionID, "[") // the driver names a connection address[-n]
		a.last[addr] = time.Now()
	}}
}

// waitNext waits for the first write a member other than killed
// acknowledged after at, and returns how long after at it came.
func (a *ackedWrites) waitNext(t *testing.T, killed string, at time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	for time.Since(at) < timeout {
		if d, ok := a.after(killed, at); ok {
			return d
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no write acknowledged within %v of a kill", timeout)
	return 0
}

func (a *ackedWrites) after(killed string, at time.Time) (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for addr, last := range a.last {
		if addr != killed && last.After(at) {
			return last.Sub(at), true
		}
	}
	return 0, false
}
