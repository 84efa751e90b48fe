// Command convox-go is a Go web app on Convox whose in-process cron runs
// each tick once for the whole app, however many web processes run: the
// robfig/cron code it started with, with the import changed to baton's
// cronx and its configuration taken from the Convox runtime.
//
// Outside Convox, with BATON_ETCD_ENDPOINTS unset, it is a plain cron and
// says so; set BATON_ETCD_ENDPOINTS to coordinate processes on a laptop:
//
//	go run ./examples/convox-go
//	go run ./convox/cmd/baton etcd &   # then, in two shells:
//	BATON_ETCD_ENDPOINTS=http://127.0.0.1:2379 PORT=3001 go run ./examples/convox-go
//	BATON_ETCD_ENDPOINTS=http://127.0.0.1:2379 PORT=3002 go run ./examples/convox-go
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/batonhq/baton/convox"
	cron "github.com/batonhq/baton/cronx" // was: github.com/robfig/cron/v3
)

// Convox kills a process termination.grace (30 s) after SIGTERM. The web
// server gets shutdownHTTP of that to finish its requests, running jobs
// then get finishJobs before their contexts end, and the rest is margin.
const (
	shutdownHTTP = 5 * time.Second
	finishJobs   = 20 * time.Second
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatalf("convox-go: %v", err)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	cfg := convox.Load()
	log.Print(cfg)
	var opts []cron.Option
	if cfg.Configured() {
		cli, err := cfg.Client()
		if err != nil {
			return err
		}
		defer cli.Close()
		opts = cfg.CronOptions(cli)
	} else {
		log.Print("convox-go: no etcd, so this is a plain cron: every process runs every tick")
	}

	c := cron.New(opts...)
	if _, err := c.AddJob("*/5 * * * *", cron.Named("report", cron.ContextFunc(report))); err != nil {
		return err
	}
	c.Start()

	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	srv := &http.Server{Addr: ":" + port, Handler: handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Printf("convox-go: listening on :%s", port)

	select {
	case err := <-served:
		<-c.Stop().Done()
		return fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}

	// SIGTERM: a deploy or a scale-down. Stop taking requests, and stop the
	// cron, which resigns so that another process runs the next tick.
	log.Print("convox-go: stopping")
	c.Stop() // at once; Shutdown below waits for the runs
	hctx, cancel := context.WithTimeout(context.Background(), shutdownHTTP)
	defer cancel()
	if err := srv.Shutdown(hctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Printf("convox-go: web server: %v", err)
	}
	// Runs that have not started are given back to the next leader at
	// once; those that have get finishJobs, then their contexts end.
	jctx, jcancel := context.WithTimeout(context.Background(), finishJobs)
	defer jcancel()
	if err := c.Shutdown(jctx); err != nil {
		log.Printf("convox-go: jobs still running after %v were cancelled", finishJobs)
	}
	log.Print("convox-go: stopped")
	return nil
}

func handler() http.Handler {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	return mux
}

// report is the job: once per tick for the whole app. Its context ends if
// this process loses its leadership mid-run, before another can start the
// job; Info names the tick it runs for and carries a fencing token.
func report(ctx context.Context) error {
	info, coordinated := cron.InfoFrom(ctx)
	if !coordinated {
		log.Print("report: running (uncoordinated)")
		return nil
	}
	log.Printf("report for %s: instance %s, fencing token %d", info.Tick.Format(time.RFC3339), info.Instance, info.Fence.Revision)
	return nil
}
