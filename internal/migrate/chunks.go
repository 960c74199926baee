package migrate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// Range is a shard key range [Min, Max), in config.chunks' bound form.
type Range struct {
	Min bson.D `bson:"min"`
	Max bson.D `bson:"max"`
}

// CompareBounds orders two bounds field by field in BSON order.
func CompareBounds(a, b bson.D) int {
	for i := range min(len(a), len(b)) {
		if c := bsonutil.Compare(a[i].Value, b[i].Value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// Contains reports whether key (in bound form) falls in r.
func (r Range) Contains(key bson.D) bool {
	return CompareBounds(r.Min, key) <= 0 && CompareBounds(key, r.Max) < 0
}

// Overlaps reports whether r and o share a key.
func (r Range) Overlaps(o Range) bool {
	return CompareBounds(r.Min, o.Max) < 0 && CompareBounds(o.Min, r.Max) < 0
}

func (r Range) String() string {
	return fmt.Sprintf("[%s, %s)", bsonutil.Format(r.Min), bsonutil.Format(r.Max))
}

// Errors of a move or split the chunks do not allow; the caller answers
// them with mongod's codes.
var (
	ErrNoChunk      = errors.New("migrate: no chunk holds the range")
	ErrNotOwner     = errors.New("migrate: the range is not on the donor")
	ErrSameShard    = errors.New("migrate: the range is already on the recipient")
	ErrEmptyRange   = errors.New("migrate: the range is empty")
	ErrBadSplit     = errors.New("migrate: a split point must fall strictly inside its chunk")
	ErrVersionMoved = errors.New("migrate: the collection's placement changed since the migration began")
)

// Move describes one committed migration.
type Move struct {
	Range     Range
	Donor     string
	Recipient string
	// At is the commit's cluster time: the moved chunk's
	// onCurrentShardSince and the first validAfter of its history.
	At bson.Timestamp
	// NewID names the chunks the move splits off; nil: bson.NewObjectID.
	NewID func() bson.ObjectID
}

// CommitMove returns a collection's chunks after m: the chunk holding
// m.Range is split where the range's bounds fall inside it, the range's
// piece goes to the recipient with version (major+1, 0), and the donor's
// pieces and one other chunk it keeps get (major+1, 1), (major+1, 2), …,
// so that both shards' versions rise and a router that saw neither
// change is refused by both. Versions only increase.
func CommitMove(chunks []shardmeta.Chunk, m Move) ([]shardmeta.Chunk, error) {
	if CompareBounds(m.Range.Min, m.Range.Max) >= 0 {
		return nil, ErrEmptyRange
	}
	out := sortedCopy(chunks)
	i := slices.IndexFunc(out, func(c shardmeta.Chunk) bool {
		return CompareBounds(c.Min, m.Range.Min) <= 0 && CompareBounds(m.Range.Max, c.Max) <= 0
	})
	if i < 0 {
		return nil, ErrNoChunk
	}
	owner := out[i]
	switch owner.Shard {
	case m.Recipient:
		return nil, ErrSameShard
	case m.Donor:
	default:
		return nil, ErrNotOwner
	}
	major := maxVersion(out).T + 1
	pieces := cut(owner, m.Range, m.newID())
	out = slices.Replace(out, i, i+1, pieces...)
	minor := uint32(1)
	for j := range out {
		c := &out[j]
		switch {
		case CompareBounds(c.Min, m.Range.Min) == 0:
			c.Shard, c.Lastmod, c.OnCurrentShardSince = m.Recipient, bson.Timestamp{T: major}, m.At
			c.History = append([]shardmeta.ChunkHistory{{ValidAfter: m.At, Shard: m.Recipient}}, c.History...)
		case CompareBounds(c.Min, owner.Min) >= 0 && CompareBounds(c.Max, owner.Max) <= 0:
			c.Lastmod, minor = bson.Timestamp{T: major, I: minor}, minor+1
		}
	}
	bumpControlChunk(out, m.Donor, major, minor, owner)
	return out, nil
}

// bumpControlChunk raises one more of the donor's chunks, outside the
// moved one, to the new major when none of its pieces stayed on it
// (mongod's control chunk): the donor's shard version then changes too.
func bumpControlChunk(chunks []shardmeta.Chunk, donor string, major, minor uint32, moved shardmeta.Chunk) {
	for j := range chunks {
		c := &chunks[j]
		if c.Shard == donor && c.Lastmod.T == major {
			return
		}
	}
	for j := range chunks {
		c := &chunks[j]
		if c.Shard == donor && !(CompareBounds(c.Min, moved.Min) >= 0 && CompareBounds(c.Max, moved.Max) <= 0) {
			c.Lastmod = bson.Timestamp{T: major, I: minor}
			return
		}
	}
}

// cut splits c at r's bounds where they fall inside it: up to three
// chunks, the middle one exactly r. The first keeps c's _id.
func cut(c shardmeta.Chunk, r Range, newID func() bson.ObjectID) []shardmeta.Chunk {
	var pieces []shardmeta.Chunk
	add := func(lo, hi bson.D) {
		p := c
		p.Min, p.Max, p.History = lo, hi, slices.Clone(c.History)
		if len(pieces) > 0 {
			p.ID = newID()
		}
		pieces = append(pieces, p)
	}
	if CompareBounds(c.Min, r.Min) < 0 {
		add(c.Min, r.Min)
	}
	add(r.Min, r.Max)
	if CompareBounds(r.Max, c.Max) < 0 {
		add(r.Max, c.Max)
	}
	return pieces
}

// Split returns the chunks after splitting the chunk holding each point
// there. Each new piece gets the collection's major and the next minors,
// as mongod's splitChunk bumps the collection version's minor.
func Split(chunks []shardmeta.Chunk, points []bson.D, newID func() bson.ObjectID) ([]shardmeta.Chunk, error) {
	if newID == nil {
		newID = bson.NewObjectID
	}
	out := sortedCopy(chunks)
	top := maxVersion(out)
	for _, p := range points {
		i := slices.IndexFunc(out, func(c shardmeta.Chunk) bool {
			return CompareBounds(c.Min, p) < 0 && CompareBounds(p, c.Max) < 0
		})
		if i < 0 {
			return nil, ErrBadSplit
		}
		lo, hi := out[i], out[i]
		lo.Max, hi.Min, hi.ID = p, p, newID()
		lo.History, hi.History = slices.Clone(out[i].History), slices.Clone(out[i].History)
		top.I++
		lo.Lastmod = top
		top.I++
		hi.Lastmod = top
		out = slices.Replace(out, i, i+1, lo, hi)
	}
	return out, nil
}

// Diff is what must be written to turn old into updated: the chunks to
// store (new or changed) and the _ids to delete.
func Diff(old, updated []shardmeta.Chunk) (write []shardmeta.Chunk, remove []bson.ObjectID) {
	before := map[bson.ObjectID]shardmeta.Chunk{}
	for _, c := range old {
		before[c.ID] = c
	}
	for _, c := range updated {
		if o, ok := before[c.ID]; !ok || !sameChunk(o, c) {
			write = append(write, c)
		}
		delete(before, c.ID)
	}
	for id := range before {
		remove = append(remove, id)
	}
	slices.SortFunc(remove, func(a, b bson.ObjectID) int { return strings.Compare(a.Hex(), b.Hex()) })
	return write, remove
}

func sameChunk(a, b shardmeta.Chunk) bool {
	return a.Shard == b.Shard && a.Lastmod == b.Lastmod && CompareBounds(a.Min, b.Min) == 0 &&
		CompareBounds(a.Max, b.Max) == 0 && len(a.History) == len(b.History)
}

func (m Move) newID() func() bson.ObjectID {
	if m.NewID != nil {
		return m.NewID
	}
	return bson.NewObjectID
}

func sortedCopy(chunks []shardmeta.Chunk) []shardmeta.Chunk {
	out := slices.Clone(chunks)
	slices.SortFunc(out, func(a, b shardmeta.Chunk) int { return CompareBounds(a.Min, b.Min) })
	return out
}

// maxVersion is the highest lastmod among chunks.
func maxVersion(chunks []shardmeta.Chunk) bson.Timestamp {
	var top bson.Timestamp
	for _, c := range chunks {
		if c.Lastmod.T > top.T || c.Lastmod.T == top.T && c.Lastmod.I > top.I {
			top = c.Lastmod
		}
	}
	return top
}

// ChunkHolding returns the chunk that holds r whole, if any.
func ChunkHolding(chunks []shardmeta.Chunk, r Range) (shardmeta.Chunk, bool) {
	for _, c := range chunks {
		if CompareBounds(c.Min, r.Min) <= 0 && CompareBounds(r.Max, c.Max) <= 0 {
			return c, true
		}
	}
	return shardmeta.Chunk{}, false
}

// OwnerOf returns the shard owning all of r, "" when no single chunk's
// shard does (r spans shards or chunks are missing).
func OwnerOf(chunks []shardmeta.Chunk, r Range) string {
	owner := ""
	for _, c := range sortedCopy(chunks) {
		if !(Range{Min: c.Min, Max: c.Max}).Overlaps(r) {
			continue
		}
		if owner != "" && owner != c.Shard {
			return ""
		}
		owner = c.Shard
	}
	return owner
}
