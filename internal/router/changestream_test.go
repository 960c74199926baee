package router

import (
	"math/rand/v2"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/changestream"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestMergedTokenRoundTrip: every token kind and shard name survives its
// _data text, and the text orders one shard's tokens as their positions.
func TestMergedTokenRoundTrip(t *testing.T) {
	for _, tok := range []mergedToken{
		{pos: changestream.Position{TS: changestream.Timestamp{T: 1, I: 2}, Index: 3}, shard: "shA"},
		{pos: changestream.Position{TS: changestream.Timestamp{T: 1, I: 2}, Index: 3}, kind: changestream.KindInvalidate, shard: "shB"},
		{pos: changestream.HighWater(changestream.Timestamp{T: 9, I: 9})},
	} {
		got, err := parseMergedToken("startAfter", tok.doc())
		if err != nil || got != tok {
			t.Errorf("%+v: parsed back as %+v, %v", tok, got, err)
		}
	}
	low := mergedToken{pos: changestream.Position{TS: changestream.Timestamp{T: 1, I: 2}}, shard: "shA"}
	high := mergedToken{pos: changestream.Position{TS: changestream.Timestamp{T: 1, I: 3}}, shard: "shA"}
	if low.String() >= high.String() {
		t.Errorf("%s sorts after %s", low, high)
	}
}

// TestMergedTokenRefusals: a malformed token, a shard's own token and
// resumeAfter an invalidate are refused with mongod's codes.
func TestMergedTokenRefusals(t *testing.T) {
	invalidate := mergedToken{kind: changestream.KindInvalidate, shard: "shA"}
	shardTok := changestream.Token{Pos: changestream.HighWater(changestream.Timestamp{T: 5})}
	for _, c := range []struct {
		field string
		v     any
		code  mongoerr.Code
	}{
		{"resumeAfter", "text", mongoerr.TypeMismatch},
		{"resumeAfter", bson.D{{Key: "_data", Value: int32(1)}}, mongoerr.FailedToParse},
		{"resumeAfter", bson.D{{Key: "_data", Value: "zz"}}, mongoerr.FailedToParse},
		{"resumeAfter", bson.D{{Key: "_data", Value: shardTok.String()}}, mongoerr.FailedToParse},
		{"resumeAfter", invalidate.doc(), mongoerr.InvalidResumeToken},
	} {
		_, err := parseMergedToken(c.field, c.v)
		if got := mongoerr.As(err).Code; got != c.code {
			t.Errorf("%s %v: code %d (%v), want %d", c.field, c.v, got, err, c.code)
		}
	}
	if _, err := parseMergedToken("startAfter", invalidate.doc()); err != nil {
		t.Errorf("startAfter an invalidate: %v", err)
	}
}

// shardScript is one shard's changes for the merge property test.
type shardScript struct {
	name   string
	events []mergedToken // in log order
	sent   int           // how many the shard has sent
}

// TestMergeEmitsInClusterTimeOrder: three shards send their changes in
// random rounds, each round with a high-water mark at or after its last
// change; many positions are shared across shards, and some changes come
// with a migration's copy (fromMigrate). The merged stream
// must hand out exactly every change, each once, in (position, shard,
// kind) order, never one past a shard's mark, and its
// postBatchResumeToken must never go back. Resuming after any handed-out
// token must give exactly the rest.
func TestMergeEmitsInClusterTimeOrder(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		scripts := randomScripts(rng)
		got, tokens := runMerge(t, rng, scripts, mergedToken{}, false)
		want := allEvents(scripts)
		if !slices.EqualFunc(got, want, func(a, b mergedToken) bool { return a == b }) {
			t.Fatalf("seed %d: merged %v, want %v", seed, got, want)
		}
		cut := rng.IntN(len(tokens))
		for i := range scripts {
			scripts[i].sent = 0
		}
		rest, _ := runMerge(t, rng, scripts, tokens[cut], true)
		if !slices.Equal(rest, want[cut+1:]) {
			t.Fatalf("seed %d: resumed after %d: %v, want %v", seed, cut, rest, want[cut+1:])
		}
	}
}

func randomScripts(rng *rand.Rand) []*shardScript {
	scripts := []*shardScript{{name: "shA"}, {name: "shB"}, {name: "shC"}}
	ts := changestream.Timestamp{T: 100, I: 1}
	for range 60 {
		ts.I += uint32(rng.IntN(2)) // about half the changes share a stamp with the one before
		s := scripts[rng.IntN(len(scripts))]
		index := uint32(0)
		if n := len(s.events); n > 0 && s.events[n-1].pos.TS == ts {
			index = s.events[n-1].pos.Index + 1
		}
		s.events = append(s.events, mergedToken{pos: changestream.Position{TS: ts, Index: index}, shard: s.name})
	}
	return scripts
}

func allEvents(scripts []*shardScript) []mergedToken {
	var all []mergedToken
	for _, s := range scripts {
		all = append(all, s.events...)
	}
	slices.SortFunc(all, compareMerged)
	return all
}

// runMerge feeds the scripts to a mergedStream in random rounds and
// returns what it hands out, with the postBatchResumeToken of each
// event's batch checked.
func runMerge(t *testing.T, rng *rand.Rand, scripts []*shardScript, seen mergedToken, resumed bool) ([]mergedToken, []mergedToken) {
	cs := &mergedStream{seen: seen, resumed: resumed}
	for _, s := range scripts {
		cs.shards = append(cs.shards, &shardFeed{shard: s.name, id: 1})
	}
	var out, tokens []mergedToken
	for round := 0; round < 500 && len(out) < countAfter(scripts, seen, resumed); round++ {
		for i, s := range scripts {
			if rng.IntN(3) > 0 {
				sendRound(t, rng, cs, cs.shards[i], s)
			}
		}
		before := cs.pbrt
		batch := cs.emit(int64(rng.IntN(4)) - 1)
		low, _ := cs.limit()
		for _, raw := range batch {
			tok, err := parseMergedToken("startAfter", mustField(bsonutil.ToD(raw), "_id"))
			if err != nil {
				t.Fatal(err)
			}
			if tok.pos.After(low) {
				t.Fatalf("handed out %v past the shards' mark %v", tok, low)
			}
			out, tokens = append(out, tok), append(tokens, tok)
		}
		if compareMerged(cs.pbrt, before) < 0 {
			t.Fatalf("postBatchResumeToken went back from %v to %v", before, cs.pbrt)
		}
	}
	return out, tokens
}

func countAfter(scripts []*shardScript, seen mergedToken, resumed bool) int {
	n := 0
	for _, ev := range allEvents(scripts) {
		if !resumed || compareMerged(ev, seen) > 0 {
			n++
		}
	}
	return n
}

// sendRound gives the stream a shard's next few changes as a cursor
// reply, with a mark at its last change or a little after.
func sendRound(t *testing.T, rng *rand.Rand, cs *mergedStream, f *shardFeed, s *shardScript) {
	n := min(rng.IntN(3), len(s.events)-s.sent)
	batch := bson.A{}
	for _, ev := range s.events[s.sent : s.sent+n] {
		id := bson.D{{Key: "_data", Value: changestream.Token{Pos: ev.pos, Kind: ev.kind}.String()}}
		if rng.IntN(8) == 0 { // a migration's copy of the change: never shown
			batch = append(batch, bson.D{{Key: "_id", Value: id}, {Key: "fromMigrate", Value: true}})
		}
		batch = append(batch, bson.D{{Key: "_id", Value: id}})
	}
	s.sent += n
	mark := f.hwm
	if s.sent > 0 {
		mark = s.events[s.sent-1].pos
	}
	if s.sent == len(s.events) || rng.IntN(2) == 0 {
		// An idle shard's mark moves past its last change, up to the
		// next change's stamp on any shard, never beyond its own next one.
		mark = idleMark(s, mark)
	}
	cur := bson.D{{Key: "nextBatch", Value: batch},
		{Key: "postBatchResumeToken", Value: bson.D{{Key: "_data", Value: changestream.Token{Pos: mark}.String()}}},
		{Key: "id", Value: int64(1)}}
	if err := cs.take(f, cur, "nextBatch"); err != nil {
		t.Fatal(err)
	}
}

// idleMark is the highest mark a shard may report having sent its first
// s.sent changes: just before its next change, or far ahead when it has
// no more.
func idleMark(s *shardScript, at changestream.Position) changestream.Position {
	if s.sent == len(s.events) {
		return changestream.HighWater(changestream.Timestamp{T: 1 << 30})
	}
	next := s.events[s.sent].pos
	if next.Index > 0 {
		return changestream.Position{TS: next.TS, Index: next.Index - 1}
	}
	if before := changestream.JustBefore(next.TS); before.After(at) {
		return before
	}
	return at
}
