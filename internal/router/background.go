package router

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/clock"
	"github.com/mayflydb/mayfly/internal/shardmeta"
)

// pingInterval is how often the router records itself in config.mongos
// (mongos's 30 s), which sh.status lists as the active routers.
const pingInterval = 30 * time.Second

// Start begins the router's background work: it makes sure the cluster
// has its config.version document (its clusterId), then records itself
// in config.mongos every pingInterval, until Close.
func (r *Router) Start() {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.heartbeat()
	}()
}

func (r *Router) heartbeat() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.done
		cancel()
	}()
	versioned := false
	for {
		op := &operation{ctx: ctx, db: "config"}
		if !versioned {
			versioned = r.ensureClusterVersion(op) == nil
		}
		if err := r.ping(op); err != nil && ctx.Err() == nil {
			r.log.Warn("cannot reach the config servers", "configdb", r.cfg.ConfigDB, "err", err)
		}
		if r.cfg.RequireAuth {
			r.reloadUsers() // another router's user changes, as mongos's user cache refresh
		}
		wait := pingInterval
		if !versioned {
			wait = time.Second
		}
		if !clock.Sleep(ctx, r.clock, wait) {
			return
		}
	}
}

// ensureClusterVersion creates config.version's {_id: 1, clusterId} if
// no one has: the first router (or the config server) wins.
func (r *Router) ensureClusterVersion(op *operation) error {
	return r.configUpdate(op, shardmeta.VersionCollection, bson.D{{Key: "_id", Value: int32(1)}},
		bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: "clusterId", Value: bson.NewObjectID()}}}}, true)
}

func (r *Router) ping(op *operation) error {
	now := r.clock.Now()
	up := int64(now.Sub(r.started.Time()) / time.Second)
	doc := bson.D{{Key: "$set", Value: bson.D{
		{Key: "ping", Value: bson.NewDateTimeFromTime(now)}, {Key: "up", Value: up}, {Key: "waiting", Value: true},
		{Key: "mongoVersion", Value: r.cfg.Version}, {Key: "advisoryHostFQDNs", Value: bson.A{}},
	}}}
	return r.configUpdate(op, shardmeta.MongosCollection, bson.D{{Key: "_id", Value: r.cfg.Host}}, doc, true)
}
