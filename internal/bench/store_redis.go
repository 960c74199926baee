package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialRedis connects go-redis to addr with at most pool connections, and
// pings it.
func dialRedis(ctx context.Context, addr string, pool int) (*redis.Client, error) {
	c := redis.NewClient(&redis.Options{
		Addr:     addr,
		PoolSize: max(pool, 1),
		// Redis 7.0 has no CLIENT SETINFO; skip the attempt.
		DisableIdentity: true,
	})
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("ping redis %s: %w", addr, err)
	}
	return c, nil
}

// redisStore runs the session operations the way a Redis application
// does: a hash per session and the key's TTL as the expiry.
type redisStore struct{ c *redis.Client }

func newRedisStore(ctx context.Context, addr string, pool int) (*redisStore, error) {
	c, err := dialRedis(ctx, addr, pool)
	if err != nil {
		return nil, err
	}
	return &redisStore{c: c}, nil
}

// touch is EXPIRE.
func (s *redisStore) touch(ctx context.Context, tok string, _ time.Time) (bool, error) {
	ok, err := s.c.Expire(ctx, redisKey(tok), sessionTTL).Result()
	if err != nil {
		return false, fmt.Errorf("touch: %w", err)
	}
	return ok, nil
}

// verify is HGETALL, with the fields parsed as the driver decodes them.
func (s *redisStore) verify(ctx context.Context, tok string) (bool, error) {
	m, err := s.c.HGetAll(ctx, redisKey(tok)).Result()
	if err != nil {
		return false, fmt.Errorf("verify: %w", err)
	}
	if len(m) == 0 {
		return false, nil
	}
	if _, err := strconv.ParseInt(m["userID"], 10, 64); err != nil {
		return false, fmt.Errorf("verify: userID: %w", err)
	}
	if _, err := strconv.ParseInt(m["accessTime"], 10, 64); err != nil {
		return false, fmt.Errorf("verify: accessTime: %w", err)
	}
	return true, nil
}

// login is HSET and EXPIRE, pipelined into one round trip.
func (s *redisStore) login(ctx context.Context, tok string, user int64, now time.Time) error {
	key := redisKey(tok)
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "userID", user, "accessTime", now.UnixMilli())
		p.Expire(ctx, key, sessionTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	return nil
}

// logout is DEL.
func (s *redisStore) logout(ctx context.Context, tok string) (bool, error) {
	n, err := s.c.Del(ctx, redisKey(tok)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("logout: %w", err)
	}
	return n > 0, nil
}

func (s *redisStore) close(context.Context) error { return s.c.Close() }
