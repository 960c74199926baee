package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The user the bench's clients log in as on Mayfly with --auth.
const (
	benchUser = "bench"
	benchPwd  = "bench-pw"
)

// withBenchUser creates the bench user on a fresh --auth server through
// the localhost exception and makes the clients dial with its credentials
// (SCRAM-SHA-256, the drivers' choice; each pooled connection logs in
// once).
func withBenchUser(ctx context.Context, s *server) error {
	c, err := dialMongo(ctx, s.addr, 1)
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(ctx) }()
	err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: benchUser},
		{Key: "pwd", Value: benchPwd}, {Key: "roles", Value: bson.A{"root"}}}).Err()
	if err != nil {
		return fmt.Errorf("create the bench user on %s: %w", s.name, err)
	}
	s.dial = benchUser + ":" + benchPwd + "@" + s.addr
	return nil
}

// dialAddr is where clients connect.
func (s *server) dialAddr() string {
	if s.dial != "" {
		return s.dial
	}
	return s.addr
}
