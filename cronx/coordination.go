package cronx

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Mode says how the replicas of a coordinated Cron share its ticks.
type Mode int

const (
	// LeaderMode elects one replica, which schedules every job; the others
	// wait, costing etcd one watch and their lease keepalives.
	LeaderMode Mode = iota
	// ClaimMode lets every replica schedule; the first valid claim of a tick
	// runs it. There is no failover gap and runs spread over replicas, for
	// one transaction per replica per tick.
	ClaimMode
)

func (m Mode) String() string {
	if m == ClaimMode {
		return "claim"
	}
	return "leader"
}

// Misfire says what a coordinated Cron does with a tick that no replica
// could run on time: one that fell while leadership passed from a crashed
// replica to the next, or while etcd could not be reached, or one that the
// scheduling replica woke up for late (a stalled process): a tick fired
// past its deadline (RunOnce's grace, Skip's second) is skipped and
// reported as ReasonMisfireSkipped. A leader whose loop wakes up past
// several ticks of a job fires the earliest while it is within its
// deadline, else the latest, and reports the others so; robfig/cron, and
// a Cron alone or in claim mode, fire the earliest and report none.
type Misfire int

const (
	// RunOnce runs the latest missed tick of each job once, if it is no
	// older than the grace period.
	RunOnce Misfire = iota
	// Skip runs no missed tick.
	Skip
)

// DefaultMisfireGrace is how late a missed tick may still run under RunOnce.
const DefaultMisfireGrace = time.Minute

// coordConfig collects the coordination options given to New.
type coordConfig struct {
	client  *clientv3.Client
	elector *election.Elector
	name    string
	mode    Mode
	modeSet bool
	misfire Misfire
	grace   time.Duration
	eopts   []election.Option
	errs    []error
	// release is WithRelease's, when releaseSet (atstart.go).
	release    string
	releaseSet bool
}

// WithEtcd coordinates the Cron with the other replicas through client.
// The Cron does not close the client.
func WithEtcd(client *clientv3.Client) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if client == nil {
			cfg.errs = append(cfg.errs, errors.New("cronx: WithEtcd: nil etcd client"))
		}
		cfg.client = client
	}
}

// WithElector coordinates the Cron in leader mode with e: the Cron schedules
// while e leads. The scheduler is named after e's election unless WithName
// says otherwise.
func WithElector(e *election.Elector) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if e == nil {
			cfg.errs = append(cfg.errs, errors.New("cronx: WithElector: nil elector"))
		}
		cfg.elector = e
	}
}

// WithName names the scheduler, the same in every replica. Its jobs' keys
// live under P/jobs/<name> and, in leader mode, its election is
// P/election/<name>. Without it, the first Cron a process creates is named
// "cron", the second "cron-2", and so on, which is the same in every
// replica of one build that creates its Crons in a fixed order.
func WithName(name string) Option {
	return func(c *Cron) { c.coordConfig().name = name }
}

// WithMode chooses LeaderMode (the default) or ClaimMode.
func WithMode(m Mode) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if m != LeaderMode && m != ClaimMode {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMode(%d): not a mode", int(m)))
		}
		cfg.mode, cfg.modeSet = m, true
	}
}

// WithMisfire sets the misfire policy and, for RunOnce, how late a missed
// tick may still run. The default is RunOnce within DefaultMisfireGrace.
func WithMisfire(p Misfire, grace time.Duration) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if p != RunOnce && p != Skip {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMisfire(%d): not a policy", int(p)))
		}
		if grace < 0 {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMisfire: negative grace %v", grace))
		}
		cfg.misfire, cfg.grace = p, grace
	}
}

// WithElection passes options to the election and sessions the Cron makes:
// prefix, TTL, identity, margin, logger. They win over the environment.
func WithElection(opts ...election.Option) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		cfg.eopts = append(cfg.eopts, opts...)
	}
}

// schedulers counts the Crons of this process, for default names.
var schedulers atomic.Int64

// newCoordinator returns nil when the Cron is not coordinated: no
// coordination option and no BATON_ETCD_ENDPOINTS.
func newCoordinator(c *Cron, cfg *coordConfig) (*coordinator, error) {
	n := schedulers.Add(1)
	conn := election.ConnectionFromEnv()
	if cfg == nil && !conn.Configured() {
		return nil, nil
	}
	if cfg == nil {
		cfg = &coordConfig{grace: DefaultMisfireGrace}
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	sc := &scope{mode: cfg.mode, misfire: cfg.misfire, grace: cfg.grace, eopts: cfg.eopts, release: releaseOf(cfg), logger: c.logger, clock: c.clock}
	co := &coordinator{scope: sc, writes: writes{sc}, host: c, runs: c.runs, elector: cfg.elector}
	co.conn = &connection{sc: sc, work: &co.work, client: cfg.client}
	switch {
	case cfg.elector != nil && cfg.client != nil:
		return nil, errors.New("cronx: WithElector and WithEtcd both given; the elector brings its client")
	case cfg.elector != nil && cfg.modeSet && cfg.mode == ClaimMode:
		return nil, errors.New("cronx: WithElector contradicts WithMode(ClaimMode), which elects no leader")
	case cfg.elector != nil:
		co.conn.client = cfg.elector.Client()
		sc.eopts = append([]election.Option{election.WithPrefix(cfg.elector.Prefix()),
			election.WithIdentity(cfg.elector.Identity()), election.WithTTL(cfg.elector.TTL())}, sc.eopts...)
	case cfg.client == nil && !conn.Configured():
		// Only misfire, mode or name options: nothing to coordinate with.
		return nil, nil
	case cfg.client == nil:
		co.conn.owns, co.conn.env = true, conn
	}
	sc.name = cfg.name
	if sc.name == "" && cfg.elector != nil {
		sc.name = cfg.elector.Name()
	}
	if sc.name == "" {
		sc.name = "cron"
		if n > 1 {
			sc.name = fmt.Sprintf("cron-%d", n)
		}
	}
	if err := election.CheckName("scheduler", co.name); err != nil {
		return nil, fmt.Errorf("cronx: WithName(%q): %w", co.name, err)
	}
	// Validate the election options now, so a bad prefix or TTL is an error
	// of New's caller rather than a log line later.
	settings, err := election.Resolve(co.eopts...)
	if err != nil {
		return nil, err
	}
	sc.identity = settings.Identity
	sc.ttl = settings.TTL
	sc.prefix = settings.Prefix
	sc.keys = jobkeys.New(sc.prefix, sc.name)
	co.rep = &reporter{sc: sc, obs: c.observers, emptyCheck: make(chan struct{}, 1)}
	co.rep.tally = newNotRunTally(co)
	if c.flushEvery > 0 {
		co.rep.tally.every = c.flushEvery
	}
	co.rep.refusals = newRefusals(co)
	co.claims = newClaimer(co)
	co.lost = &lostClaims{co: co}
	co.rec = newRecorder(co, c.runs)
	co.specs = &publisher{co: co}
	if co.conn.owns {
		// One line, so an import swap that turned coordination on says so:
		// through the Cron's Logger when one was chosen, else through
		// log/slog's default, since robfig's DefaultLogger prints no Info.
		kv := []any{"scheduler", co.name, "mode", co.mode.String(), "instance", co.identity, "endpoints", strings.Join(conn.Endpoints, ",")}
		if c.loggerSet {
			notice(c.logger, "cronx: coordinating through etcd (BATON_ETCD_ENDPOINTS)", kv...)
		} else {
			slog.Info("cronx: coordinating through etcd (BATON_ETCD_ENDPOINTS)", kv...)
		}
	}
	return co, nil
}
