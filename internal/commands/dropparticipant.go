package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/nsname"
	"github.com/mayflydb/mayfly/internal/shardcmds"
)

// cmdShardsvrDropCollectionParticipant drops this shard's copy of a
// collection the router is dropping, after the config servers forgot it:
// under the namespace's critical section, with the placement read again
// (internal/shardstate's HoldForDrop), so that no routed write of the
// dropped incarnation lands here after the drop. It answers as drop.
func cmdShardsvrDropCollectionParticipant(h *Handler, r *request) (bson.D, error) {
	m := h.shard.Migrations
	if m == nil {
		return nil, shardcmds.NotAShard(r.name)
	}
	ns, err := r.args().String(r.name)
	if err != nil {
		return nil, err
	}
	db, name, _ := strings.Cut(ns, ".")
	if err := nsname.ValidateNamespace(db, name); err != nil {
		return nil, err
	}
	release, err := m.HoldForDrop(r.ctx, ns)
	if err != nil {
		return nil, err
	}
	defer release()
	c := h.deps.Store.Collection(db, name)
	if c == nil {
		return bson.D{{Key: "ns", Value: ns}}, nil
	}
	n := len(c.Indexes())
	if _, err := h.deps.Store.DropCollection(db, name); err != nil {
		return nil, err
	}
	return bson.D{{Key: "nIndexesWas", Value: int32(n)}, {Key: "ns", Value: ns}}, nil
}

// cmdShardsvrDropDatabaseParticipant drops this shard's copy of a
// database the router is dropping, after the config servers forgot it:
// with routed commands on the database held off and its placement read
// again (internal/shardstate's HoldDatabaseForDrop), so that no routed
// write of the dropped database lands here after the drop.
func cmdShardsvrDropDatabaseParticipant(h *Handler, r *request) (bson.D, error) {
	m := h.shard.Migrations
	if m == nil {
		return nil, shardcmds.NotAShard(r.name)
	}
	db, err := r.args().String(r.name)
	if err != nil {
		return nil, err
	}
	if err := nsname.ValidateDBName(db); err != nil {
		return nil, err
	}
	if db == "admin" {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "Dropping the 'admin' database is prohibited.")
	}
	release, err := m.HoldDatabaseForDrop(r.ctx, db)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := h.deps.Store.DropDatabase(db); err != nil {
		return nil, err
	}
	return bson.D{{Key: "dropped", Value: db}}, nil
}
