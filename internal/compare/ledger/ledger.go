// Package ledger is the shared record every contender's job writes: one line
// per run, appended to one file by every replica, and read back to count
// duplicates, missed ticks and recovery times.
//
// A line is
//
//	job tick instance fence start_ns end_ns
//
// with tick the nominal scheduled time in RFC 3339 (UTC, whole seconds) and
// the times in Unix nanoseconds. A run appends its line twice: once when it
// starts, with end_ns 0, and once when it ends. A replica killed in the middle
// of a run so still leaves a trace that the run began; the reader merges the
// two lines of one run.
package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Run is one run of a job, as a replica recorded it.
type Run struct {
	Job      string
	Tick     time.Time // nominal, in the running replica's own clock
	Instance string
	Fence    int64 // the system's fencing token, 0 when it has none
	Start    time.Time
	End      time.Time // zero if the run never recorded its end (killed)
}

func (r Run) line() string {
	end := int64(0)
	if !r.End.IsZero() {
		end = r.End.UnixNano()
	}
	return fmt.Sprintf("%s %s %s %d %d %d\n", r.Job, r.Tick.UTC().Format(time.RFC3339), r.Instance, r.Fence,
		r.Start.UnixNano(), end)
}

// Do runs the workload's job for one tick: it records the start, works for
// work (a sleep standing for the job's real work), and records the end. Every
// contender's job is this function, so they differ only in when they call it.
func Do(path, job string, tick time.Time, instance string, fence int64, work time.Duration) error {
	r := Run{Job: job, Tick: tick.Truncate(time.Second), Instance: instance, Fence: fence, Start: time.Now()}
	if err := appendLine(path, r.line()); err != nil {
		return err
	}
	time.Sleep(work)
	r.End = time.Now()
	return appendLine(path, r.line())
}

// appendLine writes one line with one write(2) on an O_APPEND file, which
// Linux keeps whole when several processes append at once.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger %s: %w", path, err)
	}
	return nil
}

// Read returns the runs recorded in the file at path, ordered by start time.
// A missing file is an empty ledger.
func Read(path string) ([]Run, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lines, _, err := parse(f, path)
	return merge(lines), err
}

type runKey struct {
	job, instance string
	tick          int64
	start         int64
}

// merge joins each run's start and end lines into one Run, ordered by start.
func merge(lines []Run) []Run {
	byKey := map[runKey]*Run{}
	var order []runKey
	for _, l := range lines {
		k := runKey{l.Job, l.Instance, l.Tick.Unix(), l.Start.UnixNano()}
		if prev, ok := byKey[k]; ok {
			if !l.End.IsZero() {
				prev.End = l.End
			}
			continue
		}
		l := l
		byKey[k] = &l
		order = append(order, k)
	}
	runs := make([]Run, 0, len(order))
	for _, k := range order {
		runs = append(runs, *byKey[k])
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	return runs
}

// parse reads whole ledger lines, one Run each, and returns how many bytes
// they took: a partial last line is a write in progress, left for later.
func parse(r io.Reader, name string) ([]Run, int64, error) {
	var lines []Run
	br := bufio.NewReader(r)
	var n int64
	for lineNo := 1; ; lineNo++ {
		s, err := br.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, n, err
		}
		n += int64(len(s))
		run, perr := parseLine(strings.TrimSpace(s))
		if perr != nil {
			return nil, n, fmt.Errorf("%s:%d: %w", name, lineNo, perr)
		}
		lines = append(lines, run)
	}
	return lines, n, nil
}

func parseLine(s string) (Run, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return Run{}, fmt.Errorf("want 6 fields (job tick instance fence start_ns end_ns), got %d in %q", len(f), s)
	}
	tick, err := time.Parse(time.RFC3339, f[1])
	if err != nil {
		return Run{}, fmt.Errorf("tick %q: %w", f[1], err)
	}
	var nums [3]int64
	for i, v := range f[3:] {
		if nums[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			return Run{}, fmt.Errorf("field %d %q: %w", i+4, v, err)
		}
	}
	r := Run{Job: f[0], Tick: tick, Instance: f[2], Fence: nums[0], Start: time.Unix(0, nums[1])}
	if nums[2] != 0 {
		r.End = time.Unix(0, nums[2])
	}
	return r, nil
}

// Tail follows a ledger that replicas are still writing: each call to Next
// returns the runs whose start line appeared since the previous call.
type Tail struct {
	path   string
	offset int64
}

// NewTail follows the ledger at path from its beginning.
func NewTail(path string) *Tail { return &Tail{path: path} }

// Next returns the runs started since the last call.
func (t *Tail) Next() ([]Run, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	lines, n, err := parse(f, t.path)
	t.offset += n
	if err != nil {
		return nil, err
	}
	var started []Run
	for _, l := range lines {
		if l.End.IsZero() {
			started = append(started, l)
		}
	}
	return started, nil
}
