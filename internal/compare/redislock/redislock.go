// Package redislock is the Redis lock that the usual answers to "my cron job
// runs on every replica" give: SET key value NX with an expiry before the
// job, DEL after it. It comes in the two shapes the comparison needs: a
// wrapper for a robfig/cron job (SET NX EX) and a gocron v2 Locker (SET NX
// PX, DEL on Unlock).
//
// It is written to reproduce the pattern faithfully, faults included: the key
// is the job's name alone, the release is a plain DEL, and nothing renews the
// expiry. A job that outlives the expiry, a holder paused past it, or a
// replica whose clock fires after the holder deleted the key all let a second
// run in; that is what the comparison measures.
package redislock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"
)

// ErrHeld is returned when another holder has the key.
var ErrHeld = errors.New("redislock: held by another replica")

// TryEX takes key for ttl with SET key value NX EX seconds, the robfig-era
// form, and reports whether it got it.
func TryEX(ctx context.Context, rdb *redis.Client, key, value string, ttl time.Duration) (bool, error) {
	secs := int64(ttl / time.Second)
	if secs < 1 {
		return false, fmt.Errorf("redislock: EX needs whole seconds, got %v", ttl)
	}
	return setNX(ctx, rdb, key, value, "EX", secs)
}

// Release deletes key, whoever holds it now: the pattern's plain DEL.
func Release(ctx context.Context, rdb *redis.Client, key string) error {
	return rdb.Del(ctx, key).Err()
}

func setNX(ctx context.Context, rdb *redis.Client, key, value, unit string, n int64) (bool, error) {
	err := rdb.Do(ctx, "SET", key, value, "NX", unit, strconv.FormatInt(n, 10)).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil // NX refused: the key exists
	}
	if err != nil {
		return false, fmt.Errorf("redislock: SET %s NX %s: %w", key, unit, err)
	}
	return true, nil
}

// Locker is a gocron v2 Locker on one Redis server. gocron calls Lock with the
// job's name before each run and Unlock after it.
type Locker struct {
	log    *slog.Logger
	rdb    *redis.Client
	prefix string
	value  string
	ttl    time.Duration
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker returns a Locker whose keys are prefix+job name, whose value
// names this replica, and whose locks expire after ttl. gocron drops
// Unlock's error, so the Locker logs it to log.
func NewLocker(rdb *redis.Client, prefix, replica string, ttl time.Duration, log *slog.Logger) (*Locker, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("redislock: ttl %v: want at least 1ms", ttl)
	}
	return &Locker{log: log, rdb: rdb, prefix: prefix, value: replica, ttl: ttl}, nil
}

// Lock takes the job's key with SET NX PX. An error tells gocron to skip the
// run.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	k := l.prefix + key
	ok, err := setNX(ctx, l.rdb, k, l.value, "PX", l.ttl.Milliseconds())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrHeld, k)
	}
	return lock{log: l.log, rdb: l.rdb, key: k}, nil
}

type lock struct {
	log *slog.Logger
	rdb *redis.Client
	key string
}

// Unlock deletes the key after the run, under the context gocron passes: the
// job's, which gocron's Shutdown cancels before the run ends. The DEL then
// fails and the key stays until it expires; the pattern is kept as written.
func (l lock) Unlock(ctx context.Context) error {
	err := Release(ctx, l.rdb, l.key)
	if err != nil {
		l.log.Warn("redislock: unlock", "key", l.key, "err", err)
	}
	return err
}
