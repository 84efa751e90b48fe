package election

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// Defaults, used when neither an option nor the environment says otherwise.
const (
	DefaultPrefix = "/baton"
	DefaultTTL    = 10 * time.Second
)

// Option configures a Session, an Elector or a Mutex.
type Option func(*options)

type options struct {
	prefix   string
	identity string
	ttl      time.Duration
	margin   time.Duration // zero: derived from ttl
	logger   *slog.Logger
	clock    clock.Clock
}

// WithPrefix sets the key prefix P under which baton keeps its keys
// (P/election/<name>, P/lock/<name>, P/jobs/...). It defaults to BATON_PREFIX,
// else "/baton".
func WithPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithIdentity sets the name others see for this instance when it leads or
// holds a lock. It defaults to BATON_ID, else DefaultIdentity().
func WithIdentity(id string) Option {
	return func(o *options) { o.identity = id }
}

// WithTTL sets the lease TTL, a whole number of seconds: how long after its
// last keepalive a crashed or partitioned instance keeps its leadership or lock
// on the server. It defaults to BATON_TTL (whole seconds, "10" or "10s"), else 10 s;
// etcd grants at most MaxTTL.
func WithTTL(ttl time.Duration) Option {
	return func(o *options) { o.ttl = ttl }
}

// WithMargin sets how long before the server can expire the lease the local
// context of a leader or lock holder is cancelled. It covers the drift between
// the local clock's rate and the server's over one TTL and the time work takes
// to notice cancellation. It defaults to a tenth of the TTL, at least 500 ms.
func WithMargin(margin time.Duration) Option {
	return func(o *options) { o.margin = margin }
}

// WithLogger sets where baton logs session losses, elections and retries.
// The default discards them.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// withClock replaces the clock; tests use it.
func withClock(c clock.Clock) Option {
	return func(o *options) { o.clock = c }
}

// errNilClient is what every function given a nil etcd client returns,
// rather than panic at its first request.
var errNilClient = errors.New("election: nil etcd client")

// checkName validates a name used as one segment of a key.
func checkName(what, name string) error {
	if err := CheckName(what, name); err != nil {
		return fmt.Errorf("election: %w", err)
	}
	return nil
}

// buildOptions applies the environment, then opts, and validates the result.
func buildOptions(opts []Option) (*options, error) {
	o := &options{clock: clock.Real}
	env, err := envDefaults()
	if err != nil {
		return nil, err
	}
	o.prefix, o.identity, o.ttl = env.prefix, env.identity, env.ttl
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.margin == 0 {
		o.margin = max(o.ttl/10, 500*time.Millisecond)
	}
	return o, nil
}

func (o *options) validate() error {
	switch {
	case o.prefix == "":
		return fmt.Errorf("election: prefix is empty")
	case strings.HasSuffix(o.prefix, "/"):
		return fmt.Errorf("election: prefix %q ends with '/'", o.prefix)
	case strings.ContainsAny(o.prefix, " \t\n"):
		return fmt.Errorf("election: prefix %q contains white space", o.prefix)
	case o.identity == "":
		return fmt.Errorf("election: identity is empty")
	case o.ttl < time.Second:
		return fmt.Errorf("election: TTL %v is below 1s", o.ttl)
	case o.ttl > MaxTTL:
		return fmt.Errorf("election: TTL %v is above etcd's longest lease, %v", o.ttl, MaxTTL)
	case o.ttl%time.Second != 0:
		return fmt.Errorf("election: TTL %v is not a whole number of seconds", o.ttl)
	case o.margin < 0 || (o.margin != 0 && o.margin >= o.ttl):
		return fmt.Errorf("election: margin %v must be positive and below the TTL %v", o.margin, o.ttl)
	case o.margin == 0 && max(o.ttl/10, 500*time.Millisecond) >= o.ttl:
		return fmt.Errorf("election: TTL %v leaves no room for the default margin; use at least 1s", o.ttl)
	}
	return nil
}

type envValues struct {
	prefix, identity string
	ttl              time.Duration
}

// envDefaults reads BATON_PREFIX, BATON_ID and BATON_TTL.
func envDefaults() (envValues, error) {
	v := envValues{prefix: DefaultPrefix, identity: defaultIdentity(), ttl: DefaultTTL}
	if p := os.Getenv("BATON_PREFIX"); p != "" {
		v.prefix = p
	}
	if s := os.Getenv("BATON_TTL"); s != "" {
		ttl, err := ParseTTL(s)
		if err != nil {
			return v, fmt.Errorf("election: BATON_TTL: %w", err)
		}
		v.ttl = ttl
	}
	return v, nil
}

// defaultIdentity is BATON_ID, else DefaultIdentity().
func defaultIdentity() string {
	if id := os.Getenv("BATON_ID"); id != "" {
		return id
	}
	return DefaultIdentity()
}
