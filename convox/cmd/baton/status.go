package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/emptyetcd"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	register(command{name: "status", summary: "show elections, locks and every job's last and next run", run: runStatus})
	register(command{name: "pause", summary: "stop a job from starting on every replica", run: runPause})
	register(command{name: "resume", summary: "let a paused job run again", run: runResume})
	register(command{name: "trigger", summary: "run a job once, now, on one replica", run: runTrigger})
}

// opTimeout bounds the reads and writes of status, pause, resume and
// trigger once etcd has answered.
const opTimeout = 10 * time.Second

// defaultScheduler is the scheduler `baton crontab` runs unless given --name.
const defaultScheduler = "crontab"

const statusSynopsis = `Usage: baton status [flags]

Shows what baton coordinates under the key prefix (--prefix): every
election and who leads it, every lock and who holds it, and for every
scheduler (or the one --scheduler names) each job's schedule, whether it
is paused, its last run, who ran it and how it ended, where it runs now and
when it runs next. A job appears once a replica has published it: the
leader does so when elected, and in claim mode every replica.

The next run is computed here from the job's spec (five fields, or six with
seconds), after its last tick or now, in this machine's time zone unless
the spec names a CRON_TZ. A leader that is down or a paused job does not
run then.

A holder that is not baton (etcdctl elect or lock, etcd's concurrency
package) is shown by the value it stored, or by its lease when it stored
none.

--json prints one JSON document instead of tables, with these fields
(times are RFC 3339; a field marked ? is left out when unknown):

  prefix                       the key prefix read
  elections[]                  name, leader, since?, lease (hex), fence,
                               candidates (the leader and those waiting)
  locks[]                      name, holder, lease (hex), fence, waiting
  schedulers[]                 name, leader (empty when nobody leads), jobs[]
  schedulers[].jobs[]          name, spec, paused, paused_by?, last_tick?,
                               last_by?, last_run?, running[] (replicas
                               running it now), next?, history[]
  last_run, history[]          tick, instance, start, duration_seconds,
                               error? (the run failed), triggered?
  etcd_came_back_empty?        at, by, why: the last time a replica found
                               that etcd had lost its data, and with it ` + emptyetcd.Lost + `

fence is the etcd create revision of the leader's or holder's key: the
fencing token its work gets.`

func runStatus(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "status", statusSynopsis)
	scheduler := fs.String("scheduler", "", "show the jobs of this scheduler only (default every scheduler)")
	asJSON := fs.Bool("json", false, "print one JSON document instead of tables")
	conn := addConnFlags(fs, false, false)
	conn.access = readOnly
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected argument %q", fs.Arg(0))
	}
	if fs.Changed("scheduler") {
		if err := election.CheckName("scheduler", *scheduler); err != nil {
			return usageError(env, fs, "--scheduler: %v", err)
		}
	}
	cfg, cli, err := conn.connect(ctx)
	if err != nil {
		return fail(env, "status", err)
	}
	defer cli.Close()
	prefix, _, err := resolveNames(cfg.ElectionOptions())
	if err != nil {
		return fail(env, "status", err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rep, err := readStatus(ctx, cli, prefix, *scheduler, time.Now())
	if err != nil {
		return fail(env, "status", err)
	}
	if e, ok, _ := emptyetcd.Last(ctx, cli, prefix); ok {
		rep.EmptyEtcd = &e
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(env, "status", err)
		}
		return exitOK
	}
	if err := rep.print(env.stdout); err != nil {
		return fail(env, "status", err)
	}
	return exitOK
}

// statusReport is what `baton status` shows; its JSON is documented in
// statusSynopsis and must not change incompatibly.
type statusReport struct {
	Prefix     string            `json:"prefix"`
	Elections  []electionStatus  `json:"elections"`
	Locks      []lockStatus      `json:"locks"`
	Schedulers []schedulerStatus `json:"schedulers"`
	EmptyEtcd  *emptyetcd.Event  `json:"etcd_came_back_empty,omitempty"`
}

type electionStatus struct {
	Name       string    `json:"name"`
	Leader     string    `json:"leader"`
	Since      time.Time `json:"since,omitzero"`
	Lease      string    `json:"lease"`
	Fence      int64     `json:"fence"`
	Candidates int       `json:"candidates"`
}

type lockStatus struct {
	Name    string `json:"name"`
	Holder  string `json:"holder"`
	Lease   string `json:"lease"`
	Fence   int64  `json:"fence"`
	Waiting int    `json:"waiting"`
}

type schedulerStatus struct {
	Name   string      `json:"name"`
	Leader string      `json:"leader"`
	Jobs   []jobReport `json:"jobs"`
}

type jobReport struct {
	Name     string      `json:"name"`
	Spec     string      `json:"spec"`
	Paused   bool        `json:"paused"`
	PausedBy string      `json:"paused_by,omitempty"`
	LastTick time.Time   `json:"last_tick,omitzero"`
	LastBy   string      `json:"last_by,omitempty"`
	LastRun  *runReport  `json:"last_run,omitempty"`
	Running  []string    `json:"running"`
	Next     time.Time   `json:"next,omitzero"`
	History  []runReport `json:"history"`
}

type runReport struct {
	Tick            time.Time `json:"tick"`
	Instance        string    `json:"instance"`
	Start           time.Time `json:"start"`
	DurationSeconds float64   `json:"duration_seconds"`
	Error           string    `json:"error,omitempty"`
	Triggered       bool      `json:"triggered,omitempty"`
}

// readStatus reads the elections, locks and schedulers under prefix; only
// scheduler's jobs when it is not empty, which must then exist.
func readStatus(ctx context.Context, cli *clientv3.Client, prefix, scheduler string, now time.Time) (*statusReport, error) {
	rep := &statusReport{Prefix: prefix, Elections: []electionStatus{}, Locks: []lockStatus{}, Schedulers: []schedulerStatus{}}
	elections, err := readHolders(ctx, cli, prefix+"/election/")
	if err != nil {
		return nil, err
	}
	for _, h := range elections {
		rep.Elections = append(rep.Elections, electionStatus{Name: h.name, Leader: h.identity, Since: h.since,
			Lease: h.lease, Fence: h.fence, Candidates: h.count})
	}
	locks, err := readHolders(ctx, cli, prefix+"/lock/")
	if err != nil {
		return nil, err
	}
	for _, h := range locks {
		rep.Locks = append(rep.Locks, lockStatus{Name: h.name, Holder: h.identity, Lease: h.lease, Fence: h.fence, Waiting: h.count - 1})
	}

	names, err := schedulerNames(ctx, cli, prefix)
	if err != nil {
		return nil, err
	}
	if scheduler != "" {
		if !slices.Contains(names, scheduler) {
			return nil, fmt.Errorf("no scheduler %q has published jobs under %s%s", scheduler, prefix, knownList("; schedulers there: ", names))
		}
		names = []string{scheduler}
	}
	for _, name := range names {
		s, err := readScheduler(ctx, cli, prefix, name, now)
		if err != nil {
			return nil, err
		}
		rep.Schedulers = append(rep.Schedulers, s)
	}
	return rep, nil
}

// holder is the first-created key of an election or a lock: its leader or
// holder, as etcd's concurrency package decides.
type holder struct {
	name     string
	identity string
	since    time.Time
	lease    string
	fence    int64
	count    int // keys under the name: the holder and those waiting
}

// readHolders reads every election or lock under dir (P/election/ or
// P/lock/) in one read. A name is all of a key but its last segment, the
// lease, so names made by etcdctl with slashes are read as etcdctl wrote them.
func readHolders(ctx context.Context, cli *clientv3.Client, dir string) ([]holder, error) {
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	first := map[string]*mvccpb.KeyValue{}
	count := map[string]int{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), dir)
		i := strings.LastIndexByte(rest, '/')
		if i <= 0 {
			continue
		}
		name := rest[:i]
		count[name]++
		if f := first[name]; f == nil || kv.CreateRevision < f.CreateRevision {
			first[name] = kv
		}
	}
	var hs []holder
	for name, kv := range first {
		h := holder{name: name, fence: kv.CreateRevision, count: count[name]}
		if kv.Lease != 0 {
			h.lease = fmt.Sprintf("%x", kv.Lease)
		}
		h.identity, h.since = decodeHolder(kv.Value)
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].name < hs[j].name })
	return hs, nil
}

// decodeHolder reads the value a candidate or holder stored: baton's JSON
// {"id":...,"since":...}, or any text (etcdctl elect stores its proposal).
func decodeHolder(v []byte) (string, time.Time) {
	var bv struct {
		ID    string    `json:"id"`
		Since time.Time `json:"since"`
	}
	if json.Unmarshal(v, &bv) == nil && bv.ID != "" {
		return bv.ID, bv.Since
	}
	return string(v), time.Time{}
}

// schedulerNames lists the schedulers with keys under P/jobs/.
func schedulerNames(ctx context.Context, cli *clientv3.Client, prefix string) ([]string, error) {
	dir := prefix + "/jobs/"
	resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var names []string
	for _, kv := range resp.Kvs {
		name, _, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), dir), "/")
		if ok && name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, nil
}

func readScheduler(ctx context.Context, cli *clientv3.Client, prefix, name string, now time.Time) (schedulerStatus, error) {
	s := schedulerStatus{Name: name, Jobs: []jobReport{}}
	ctl, err := cronx.NewControl(cli, prefix, name)
	if err != nil {
		return s, err
	}
	st, err := ctl.Status(ctx)
	if err != nil {
		return s, err
	}
	s.Leader = st.Leader.Identity
	for _, j := range st.Jobs {
		if j.Spec == "" {
			continue // keys of a job no replica publishes any more
		}
		r := jobReport{Name: j.Name, Spec: j.Spec, Paused: j.Paused, PausedBy: j.PausedBy,
			LastTick: j.LastTick, LastBy: j.LastBy, Running: j.Running, History: []runReport{}}
		if r.Running == nil {
			r.Running = []string{}
		}
		for _, h := range j.History {
			r.History = append(r.History, runReport{Tick: h.Tick, Instance: h.Instance, Start: h.Start,
				DurationSeconds: h.Duration.Seconds(), Error: h.Error, Triggered: h.Triggered})
		}
		if n := len(r.History); n > 0 {
			last := r.History[n-1]
			r.LastRun = &last
		}
		r.Next = nextRun(j.Spec, j.LastTick, now)
		s.Jobs = append(s.Jobs, r)
	}
	return s, nil
}

// specParsers read a published spec: the standard five fields first, then
// six with seconds, as `baton crontab --seconds` and cronx.WithSeconds
// register them.
var specParsers = []cronx.Parser{
	cronx.NewParser(cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor),
	cronx.NewParser(cronx.Second | cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor),
}

// nextRun is the job's next tick after its last one, or after now when that
// has passed; zero when the spec does not parse.
func nextRun(spec string, last, now time.Time) time.Time {
	for _, p := range specParsers {
		sched, err := parsePublished(p, spec)
		if err != nil {
			continue
		}
		var next time.Time
		if !last.IsZero() {
			next = sched.Next(last)
		}
		if !next.After(now) {
			next = sched.Next(now)
		}
		return next
	}
	return time.Time{}
}

// parsePublished parses a spec read from etcd, which anyone with access may
// have written: robfig/cron's parser panics on some input (a time zone with
// no schedule after it), and a status report must not.
func parsePublished(p cronx.Parser, spec string) (sched cronx.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("parse %q: %v", spec, r)
		}
	}()
	return p.Parse(spec)
}

// print writes the report as aligned tables.
func (r *statusReport) print(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if e := r.EmptyEtcd; e != nil {
		fmt.Fprintf(w, "etcd came back empty: found at %s by %s (%s); lost with its data: %s.\n\n", when(e.At), e.By, e.Why, emptyetcd.Lost)
	}
	if len(r.Elections) == 0 {
		fmt.Fprintf(w, "No elections under %s.\n", r.Prefix)
	} else {
		fmt.Fprintln(w, "ELECTION\tLEADER\tSINCE\tCANDIDATES")
		for _, e := range r.Elections {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", e.Name, who(e.Leader, e.Lease), when(e.Since), e.Candidates)
		}
	}
	fmt.Fprintln(w)
	if len(r.Locks) == 0 {
		fmt.Fprintf(w, "No locks under %s.\n", r.Prefix)
	} else {
		fmt.Fprintln(w, "LOCK\tHOLDER\tWAITING")
		for _, l := range r.Locks {
			fmt.Fprintf(w, "%s\t%s\t%d\n", l.Name, who(l.Holder, l.Lease), l.Waiting)
		}
	}
	fmt.Fprintln(w)
	if len(r.Schedulers) == 0 {
		fmt.Fprintf(w, "No scheduler has published jobs under %s.\n", r.Prefix)
		return w.Flush()
	}
	fmt.Fprintln(w, "SCHEDULER\tJOB\tSPEC\tPAUSED\tLAST RUN\tBY\tRESULT\tRUNNING ON\tNEXT RUN")
	for _, s := range r.Schedulers {
		if len(s.Jobs) == 0 {
			fmt.Fprintf(w, "%s\t(no jobs)\t\t\t\t\t\t\t\n", s.Name)
		}
		for _, j := range s.Jobs {
			paused := "no"
			if j.Paused {
				paused = "yes"
				if j.PausedBy != "" {
					paused += " (" + j.PausedBy + ")"
				}
			}
			tick, by, result := j.lastRun()
			running := "-"
			if len(j.Running) > 0 {
				running = strings.Join(j.Running, ",")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
				s.Name, j.Name, j.Spec, paused, when(tick), dash(by), result, running, when(j.Next))
		}
	}
	return w.Flush()
}

// lastRun is the job's most recent run: its latest record, unless a later
// tick was claimed and is running or was never recorded.
func (j jobReport) lastRun() (tick time.Time, by, result string) {
	if h := j.LastRun; h != nil && !h.Tick.Before(j.LastTick) {
		result = "ok"
		if h.Error != "" {
			result = "failed: " + oneLine(h.Error, 60)
		}
		result += ", " + roundDuration(h.DurationSeconds)
		if h.Triggered {
			result += " (triggered)"
		}
		return h.Tick, h.Instance, result
	}
	if j.LastTick.IsZero() {
		return time.Time{}, "", "-"
	}
	if len(j.Running) > 0 {
		return j.LastTick, j.LastBy, "running"
	}
	return j.LastTick, j.LastBy, "not recorded"
}

func roundDuration(seconds float64) string {
	d := time.Duration(seconds * float64(time.Second))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

func who(identity, lease string) string {
	switch {
	case identity != "":
		return identity
	case lease != "":
		return "lease " + lease
	}
	return "-"
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// resolveNames returns the key prefix and this instance's identity, as the
// flags, the environment and election's defaults give them.
func resolveNames(opts []election.Option) (prefix, identity string, err error) {
	settings, err := election.Resolve(opts...)
	if err != nil {
		return "", "", err
	}
	return settings.Prefix, settings.Identity, nil
}

func knownList(intro string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return intro + strings.Join(names, ", ")
}
