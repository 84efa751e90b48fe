// Command replica is one replica of a contender in the comparison: a
// scheduler that runs the workload's job every second, coordinated (or not)
// the way its --system says. The comparison starts several of them and
// signals them; each appends its runs to the shared ledger.
//
//	replica --system robfig-redis --id r0 --ledger L --redis 127.0.0.1:P
//	replica --system gocron-elector --id r0 --ledger L --etcd http://127.0.0.1:P
//	replica job --ledger L    (the command baton crontab runs each tick)
//
// Systems:
//
//	robfig          robfig/cron v3 alone: the scale: 1 worker
//	robfig-redis    robfig/cron v3, SET lock:JOB NX EX before the job, DEL after
//	gocron-elector  gocron v2 with an Elector on an etcd concurrency.Election
//	gocron-redis    gocron v2 with a Locker on Redis (SET NX PX, DEL on Unlock)
//
// SIGTERM or SIGINT stops the scheduler as its documentation says to (robfig:
// Stop and wait for running jobs; gocron: Shutdown), resigns or lets go of
// what the system holds, and exits 0.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batonhq/baton/internal/compare/etcdelector"
	"github.com/batonhq/baton/internal/compare/ledger"
	"github.com/batonhq/baton/internal/compare/redislock"
	"github.com/batonhq/baton/internal/compare/skew"
	"github.com/go-co-op/gocron/v2"
	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// job is the workload's one job: its name in the ledger, in Redis keys and
// in gocron.
const job = "tick"

// spec fires every second, on the second, in every system.
const spec = "* * * * * *"

type config struct {
	system    string
	id        string
	ledger    string
	redis     string
	etcd      string
	namespace string
	ttl       time.Duration
	work      time.Duration
	offset    time.Duration
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "job" {
		os.Exit(runJob(os.Args[2:]))
	}
	var c config
	fs := flag.NewFlagSet("replica", flag.ContinueOnError)
	fs.StringVar(&c.system, "system", "", "robfig, robfig-redis, gocron-elector or gocron-redis")
	fs.StringVar(&c.id, "id", "", "this replica's name in the ledger")
	fs.StringVar(&c.ledger, "ledger", "", "the shared ledger file")
	fs.StringVar(&c.redis, "redis", "", "Redis address, host:port")
	fs.StringVar(&c.etcd, "etcd", "", "etcd client URLs, comma-separated")
	fs.StringVar(&c.namespace, "namespace", "compare", "prefix of this run's Redis keys and etcd election")
	fs.DurationVar(&c.ttl, "ttl", 5*time.Second, "lock expiry or session TTL")
	fs.DurationVar(&c.work, "work", 100*time.Millisecond, "how long the job works")
	fs.DurationVar(&c.offset, "test-clock-offset", 0, "for the comparison only: the scheduler's clock is off by this much")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if c.id == "" || c.ledger == "" {
		fmt.Fprintln(os.Stderr, "replica: --id and --ledger are required")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("replica", c.id, "system", c.system)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	var stop func()
	var err error
	switch c.system {
	case "robfig", "robfig-redis":
		stop, err = startRobfig(c, log)
	case "gocron-elector", "gocron-redis":
		stop, err = startGocron(c, log)
	default:
		err = fmt.Errorf("--system %q: want robfig, robfig-redis, gocron-elector or gocron-redis", c.system)
	}
	if err != nil {
		log.Error("replica: start", "err", err)
		os.Exit(1)
	}
	log.Info("replica: started", "offset", c.offset)
	s := <-sig
	log.Info("replica: stopping", "signal", s.String())
	stop()
	log.Info("replica: stopped")
}

// startRobfig runs robfig/cron every second. With Redis, each run is the
// usual pattern: SET lock:JOB NX EX ttl at the tick, run only if that set the
// key, DEL at the end.
func startRobfig(c config, log *slog.Logger) (func(), error) {
	var rdb *redis.Client
	if c.system == "robfig-redis" {
		if c.redis == "" {
			return nil, fmt.Errorf("--redis is required for %s", c.system)
		}
		rdb = redis.NewClient(&redis.Options{Addr: c.redis})
	}
	parser := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)
	sched, err := parser.Parse(spec)
	if err != nil {
		return nil, err
	}
	cr := cron.New(cron.WithParser(parser))
	var id atomic.Int64
	key := c.namespace + ":lock:" + job
	eid := cr.Schedule(skew.Schedule(sched, c.offset), cron.FuncJob(func() {
		// Entry.Prev is the activation this run is for; the run loop sets it
		// before it answers Entry, so this is the nominal tick, not Now.
		tick := skew.Tick(cr.Entry(cron.EntryID(id.Load())).Prev, c.offset)
		ctx := context.Background()
		if rdb != nil {
			ok, err := redislock.TryEX(ctx, rdb, key, c.id, c.ttl)
			if err != nil {
				log.Warn("lock", "err", err)
			}
			if !ok {
				return
			}
			defer func() {
				if err := redislock.Release(ctx, rdb, key); err != nil {
					log.Warn("unlock", "err", err)
				}
			}()
		}
		if err := ledger.Do(c.ledger, job, tick, c.id, 0, c.work); err != nil {
			log.Error("ledger", "err", err)
		}
	}))
	id.Store(int64(eid))
	cr.Start()
	return func() {
		<-cr.Stop().Done()
		if rdb != nil {
			rdb.Close()
		}
	}, nil
}

// startGocron runs gocron v2 every second on the skewed clock, coordinated by
// an etcd Elector or a Redis Locker.
func startGocron(c config, log *slog.Logger) (func(), error) {
	clock := skew.Clock(c.offset)
	opts := []gocron.SchedulerOption{gocron.WithClock(clock)}
	var closers []func()
	var fence func() int64
	switch c.system {
	case "gocron-elector":
		if c.etcd == "" {
			return nil, fmt.Errorf("--etcd is required for %s", c.system)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(c.etcd, ","), DialTimeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		el := etcdelector.New(cli, "/"+c.namespace+"/election/"+job, c.id, c.ttl)
		fence = el.Fence
		opts = append(opts, gocron.WithDistributedElector(el))
		closers = append(closers, el.Close, func() { cli.Close() })
	case "gocron-redis":
		if c.redis == "" {
			return nil, fmt.Errorf("--redis is required for %s", c.system)
		}
		rdb := redis.NewClient(&redis.Options{Addr: c.redis})
		locker, err := redislock.NewLocker(rdb, c.namespace+":lock:", c.id, c.ttl, log)
		if err != nil {
			return nil, err
		}
		opts = append(opts, gocron.WithDistributedLocker(locker))
		closers = append(closers, func() { rdb.Close() })
	}
	s, err := gocron.NewScheduler(opts...)
	if err != nil {
		return nil, err
	}
	_, err = s.NewJob(gocron.CronJob(spec, true), gocron.NewTask(func() {
		var f int64
		if fence != nil {
			f = fence()
		}
		// gocron does not hand the task its scheduled time; the timer that
		// started this run was set for it (see skew.OffsetClock).
		if err := ledger.Do(c.ledger, job, clock.LastFired(), c.id, f, c.work); err != nil {
			log.Error("ledger", "err", err)
		}
	}), gocron.WithName(job))
	if err != nil {
		return nil, err
	}
	s.Start()
	return func() {
		if err := s.Shutdown(); err != nil {
			log.Warn("shutdown", "err", err)
		}
		for _, c := range closers {
			c()
		}
	}, nil
}

// runJob is the command baton crontab runs each tick: the same job as the
// other contenders', named by the BATON_* variables baton sets. It ignores
// SIGTERM, as a Go job ignores robfig's Stop, and finishes its short work.
func runJob(args []string) int {
	fs := flag.NewFlagSet("replica job", flag.ContinueOnError)
	path := fs.String("ledger", "", "the shared ledger file")
	work := fs.Duration("work", 100*time.Millisecond, "how long the job works")
	if err := fs.Parse(args); err != nil || *path == "" {
		fmt.Fprintln(os.Stderr, "replica job: --ledger is required")
		return 2
	}
	signal.Ignore(syscall.SIGTERM)
	tick, err := time.Parse(time.RFC3339, os.Getenv("BATON_TICK"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "replica job: BATON_TICK: %v\n", err)
		return 2
	}
	fence, _ := strconv.ParseInt(os.Getenv("BATON_FENCE"), 10, 64)
	name := os.Getenv("BATON_JOB")
	if name == "" {
		name = job
	}
	if err := ledger.Do(*path, name, tick, os.Getenv("BATON_ID"), fence, *work); err != nil {
		fmt.Fprintf(os.Stderr, "replica job: %v\n", err)
		return 1
	}
	return 0
}
