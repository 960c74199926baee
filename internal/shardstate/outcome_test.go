package shardstate

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/migrate"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/shardmeta"
	"github.com/mayflydb/mayfly/internal/shardremote/remotetest"
)

// outcomeFixture is a donor shA whose config servers answer with db.c
// sharded over shA and shB, and a migration of shB's chunk to shA.
func outcomeFixture(t *testing.T) (*Migrations, *remotetest.Scripted, migrate.Coordinator) {
	t.Helper()
	cfg := &fakeConfig{}
	table := cfg.shard(t, "db.c", "shA", "shB")
	collRaw, err := shardmeta.Encode(*cfg.coll)
	if err != nil {
		t.Fatal(err)
	}
	var chunks bson.A
	for _, ch := range table.Chunks() {
		raw, err := shardmeta.Encode(ch)
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, raw)
	}
	r := &remotetest.Scripted{Replies: []bson.D{remotetest.CursorReply(0, "firstBatch", collRaw), remotetest.CursorReply(0, "firstBatch", chunks...)}}
	m := NewMigrations(MigrationOptions{State: newTestState(cfg, identityDoc("shA")), Client: r})
	var moved shardmeta.Chunk
	for _, ch := range table.Chunks() {
		if ch.Shard == "shB" {
			moved = ch
		}
	}
	rec := migrate.Coordinator{ID: "m1", Namespace: "db.c", Donor: "shB", Recipient: "shA",
		Range: migrate.Range{Min: moved.Min, Max: moved.Max}, Phase: migrate.PhaseCommitStarted}
	return m, r, rec
}

// TestOutcomeReadsCannotBeStale: every path that decides a migration's
// outcome from the config servers (recovery's outcome, the donor's
// answer to a refused commit) reads linearizably on the config primary,
// never a majority read any member may serve; and decides by what the
// read returned.
func TestOutcomeReadsCannotBeStale(t *testing.T) {
	paths := []struct {
		name   string
		decide func(m *Migrations, rec migrate.Coordinator) migrate.Outcome
	}{
		{"recovery's outcome", func(m *Migrations, rec migrate.Coordinator) migrate.Outcome {
			return m.outcome(context.Background(), rec)
		}},
		{"the donor's refused commit", func(m *Migrations, rec migrate.Coordinator) migrate.Outcome {
			run := &donorRun{m: m, rec: rec}
			committed, err := run.answeredRefusal(context.Background(), mongoerr.New(mongoerr.StaleConfig, "refused"))
			switch {
			case err != nil:
				return migrate.OutcomeUnknown
			case committed:
				return migrate.OutcomeRecipientOwns
			}
			return migrate.OutcomeDonorOwns
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			m, r, rec := outcomeFixture(t)
			// The config servers say the range is still shB's (the donor's).
			if got := p.decide(m, rec); got != migrate.OutcomeDonorOwns {
				t.Fatalf("outcome %v, want the donor's", got)
			}
			if len(r.Sent) != 2 {
				t.Fatalf("%d reads sent, want config.collections and config.chunks", len(r.Sent))
			}
			for _, cmd := range r.Sent {
				rc, _ := bsonutil.Field(cmd, "readConcern")
				level, _ := bsonutil.Field(bsonutil.ToD(rc), "level")
				pref, _ := bsonutil.Field(cmd, "$readPreference")
				mode, _ := bsonutil.Field(bsonutil.ToD(pref), "mode")
				if level != "linearizable" || mode != "primary" {
					t.Errorf("%v: readConcern %v on %v, want linearizable on the primary", cmd[0], level, mode)
				}
			}
		})
	}
}

// TestOutcomeUnknownWhenTheReadFails: a config primary that cannot serve
// the linearizable read leaves the outcome unknown, never a guess.
func TestOutcomeUnknownWhenTheReadFails(t *testing.T) {
	m, r, rec := outcomeFixture(t)
	r.Replies = []bson.D{{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "not primary"}, {Key: "code", Value: int32(mongoerr.NotWritablePrimary)}}}
	if got := m.outcome(context.Background(), rec); got != migrate.OutcomeUnknown {
		t.Fatalf("outcome %v after a refused read, want unknown", got)
	}
	r.Down = map[string]bool{"127.0.0.1:1": true}
	if got := m.outcome(context.Background(), rec); got != migrate.OutcomeUnknown {
		t.Fatalf("outcome %v with the config server down, want unknown", got)
	}
}
