// Package failpoint holds a server's fail points: named switches that tests
// turn on with configureFailPoint (enableTestCommands only) to make the
// server fail in ways that are hard to cause for real.
//
// A Point follows mongod's rules (src/mongo/util/fail_point.cpp): modes
// off, alwaysOn, {times: n}, {skip: n} and {activationProbability: p}; a
// predicate over the point's data decides first whether a call is one the
// point is about, and only such calls consume times and skips and count as
// entries.
package failpoint

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// FailCommand is the name of the fail point that fails commands.
const FailCommand = "failCommand"

// Mode is how an enabled point decides whether it fires.
type Mode int

// The modes of mongod's fail points.
const (
	Off Mode = iota
	AlwaysOn
	Times  // fires on the next n entries, then turns off
	Skip   // lets n entries pass, then fires on every one
	Random // fires with a probability
)

// Setting is a parsed configureFailPoint: the mode, its value and data.
type Setting struct {
	Mode        Mode
	Count       int64   // Times: entries left; Skip: entries still to pass
	Probability float64 // Random
	Data        bson.D
}

// Point is one fail point. Its methods are safe for concurrent use.
type Point struct {
	// on mirrors setting.Mode != Off, read without the lock: every
	// command asks failCommand, and a point that is off must cost it no
	// more than a load.
	on      atomic.Bool
	mu      sync.Mutex
	setting Setting
	entered int64
	rng     *rand.Rand
}

// Registry is a server's fail points by name; the set of names is fixed
// when it is made, as mongod's registry is frozen at start.
type Registry struct {
	points map[string]*Point
}

// NewRegistry returns a registry holding the named points, all off. seed
// feeds the points that fire at random.
func NewRegistry(seed uint64, names ...string) *Registry {
	r := &Registry{points: make(map[string]*Point, len(names))}
	for i, name := range names {
		r.points[name] = &Point{rng: rand.New(rand.NewPCG(seed, uint64(i)))}
	}
	return r
}

// Names lists the registry's points in order.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.points))
	for name := range r.points {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Configure applies configureFailPoint's command document to the named
// point and returns how many times the point was entered before, which
// is configureFailPoint's count.
func (r *Registry) Configure(name string, cmd bson.D) (int64, error) {
	p, ok := r.points[name]
	if !ok {
		return 0, mongoerr.Newf(mongoerr.FailPointSetFailed, "%s not found", name)
	}
	s, err := Parse(cmd)
	if err != nil {
		return 0, err
	}
	return p.Set(s), nil
}

// Point returns the named point, or nil.
func (r *Registry) Point(name string) *Point { return r.points[name] }

// On reports whether the named point is configured to fire at all; a
// caller skips building the call it would evaluate when it is not.
func (r *Registry) On(name string) bool {
	p := r.points[name]
	return p != nil && p.on.Load()
}

// Set replaces the point's setting and returns its entries so far.
func (p *Point) Set(s Setting) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setting = s
	p.on.Store(s.Mode != Off)
	return p.entered
}

// Entered returns how many times the point has fired.
func (p *Point) Entered() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entered
}

// Evaluate reports whether the point fires for a call that applies
// accepts, and with which data. A call applies refuses neither consumes a
// time or a skip nor counts as an entry.
func (p *Point) Evaluate(applies func(data bson.D) bool) (bson.D, bool) {
	if !p.on.Load() {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &p.setting
	if s.Mode == Off || !applies(s.Data) || !p.fires(s) {
		return nil, false
	}
	p.entered++
	return s.Data, true
}

// fires applies the mode to one applicable call; p.mu is held.
func (p *Point) fires(s *Setting) bool {
	switch s.Mode {
	case AlwaysOn:
		return true
	case Times:
		s.Count--
		if s.Count <= 0 {
			s.Mode = Off
			p.on.Store(false)
		}
		return true
	case Skip:
		if s.Count <= 0 {
			return true
		}
		s.Count--
		return false
	case Random:
		// mongod draws a non-negative int32 below p·MaxInt32.
		return p.rng.Int32() < int32(math.MaxInt32*s.Probability)
	}
	return false
}
