package repl

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A config entry that reaches the log after a newer one is refused on
// apply: the primary's copy of its initiate config, proposed when it is
// promoted, can land after a reconfig a client sent at once, and must not
// put the set back on the older config (in memory, in storage, or for
// its proposer).
func TestOlderConfigEntryDoesNotUndoAReconfig(t *testing.T) {
	rs, promoted := newLoneMember(t)
	if err := rs.Initiate(nil); err != nil {
		t.Fatalf("initiate: %v", err)
	}
	awaitPromotion(t, promoted)
	initial := rs.Config()
	doc := append(withoutKey(initial.Doc(), "version"), bson.E{Key: "version", Value: int32(initial.Version + 1)})
	if err := rs.Reconfig(doc); err != nil {
		t.Fatalf("reconfig: %v", err)
	}

	err := rs.proposeConfig(initial)
	var refused *IncompatibleConfigError
	if !errors.As(err, &refused) {
		t.Fatalf("proposing version %d over %d: got %v, want NewReplicaSetConfigurationIncompatible", initial.Version, initial.Version+1, err)
	}
	if v := rs.Config().Version; v != initial.Version+1 {
		t.Errorf("config version in memory is %d after the older entry, want %d", v, initial.Version+1)
	}
	raw, err := rs.cfg.Base.Get(configKey)
	if err != nil {
		t.Fatalf("stored config: %v", err)
	}
	if v := configVersion(raw); v != int64(initial.Version+1) {
		t.Errorf("stored config version is %d after the older entry, want %d", v, initial.Version+1)
	}
	// An equal version is still adopted: the initiate config's first copy
	// when no reconfig came before it.
	c, err := ParseConfig(doc)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := rs.proposeConfig(c); err != nil {
		t.Errorf("proposing the applied version again: %v", err)
	}
}
