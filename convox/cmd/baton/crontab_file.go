package main

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
)

// A crontab, as baton reads it:
//
//	# comments and blank lines are skipped
//	MAILTO=ops@example.com        NAME=value sets the environment of later commands
//	GREETING="hello world"        a value with white space is quoted
//	CRON_TZ=Europe/Berlin         sets the time zone of later entries
//	report: 0 3 * * * node report.js
//	*/5 * * * * ./bin/sweep --fast
//	@every 30s curl -fsS http://localhost:3000/ping
//	TZ=Asia/Tokyo 30 4 * * * ./bin/tokyo   a zone for one entry (TZ= or CRON_TZ=)
//	nightly: [timeout=1h] 0 2 * * * ./bin/nightly   options for one entry
//	sync: [on-failure="./bin/alert sync"] @hourly ./bin/sync
//
// An entry is an optional name ending in ':', optional options in brackets
// (crontab_options.go), an optional zone, a spec (five
// fields, six with --seconds, or a descriptor such as @daily or "@every
// 1m"), and a command that runs with sh -c, verbatim ('%' is not special).
// What cannot be read without guessing is an error naming its line: an
// unquoted NAME=value followed by more words, a name with characters a key
// cannot hold, an @every that robfig/cron would round.

// crontabEntry is one job of a crontab.
type crontabEntry struct {
	line    int
	name    string // given, or derived from the command and spec
	named   bool   // the name was given
	spec    string // as cronx parses it, with a CRON_TZ= prefix when a zone applies
	command string
	env     []string // NAME=value lines above the entry
	opts    []cronx.JobOption
	retry   retrySetting
	hooks   hookSetting
	options string // the options as written, normalized; "" when none
	atStart bool   // at-start=yes (crontab_start.go)
	// jitter is the entry's own jitter=, nil if none; gap the shortest
	// time between two of its ticks.
	jitter *time.Duration
	gap    time.Duration
}

var (
	envLine   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	nameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	fieldLike = regexp.MustCompile(`^[0-9*?/,-]+$`)
	// optionsLike is a word that opens an entry's options.
	optionsLike = regexp.MustCompile(`^\[(` + strings.ReplaceAll(optionKeys, ", ", "|") + `)=`)
)

// errUnreadable marks a crontab file that could not be read (missing, a
// directory, no permission), as opposed to one that does not parse.
var errUnreadable = errors.New("crontab not readable")

// unreadableError is a read error of a crontab file.
type unreadableError struct{ err error }

func (e unreadableError) Error() string        { return e.err.Error() }
func (e unreadableError) Unwrap() error        { return e.err }
func (e unreadableError) Is(target error) bool { return target == errUnreadable }

// readCrontab reads and parses file, and checks the entries against the
// --jitter every entry without a jitter= of its own gets.
func readCrontab(file string, seconds bool, jitter time.Duration) ([]crontabEntry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, unreadableError{err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, unreadableError{fmt.Errorf("%s is a directory, not a crontab file", file)}
	}
	entries, err := parseCrontab(f, file, seconds)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range entries {
		if e.jitter == nil && jitter > 0 && jitter >= e.gap {
			errs = append(errs, fmt.Errorf("%s:%d: --jitter %v is not shorter than the %v between the job's ticks: its runs would lose ticks", file, e.line, jitter, e.gap))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return entries, nil
}

// parseCrontab reads a whole crontab. It reports every bad line, each as
// "file:line: problem", so that nothing starts from a crontab with a mistake.
func parseCrontab(r io.Reader, file string, seconds bool) ([]crontabEntry, error) {
	nfields := 5
	if seconds {
		nfields = 6
	}
	parser := cronParser(seconds)

	var (
		entries []crontabEntry
		errs    []error
		env     []string
		zone    string
		named   = map[string]int{} // name → line
		copies  = map[string]int{}
	)
	bad := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...)))
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n := 1
	for ; sc.Scan(); n++ {
		text := sc.Text()
		if n == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a byte order mark, as some editors write
		}
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		toks := tokens(text)
		first := text[toks[0][0]:toks[0][1]]

		// NAME=value: the environment, or the zone of later entries. A
		// TZ= or CRON_TZ= followed by a schedule is a zone for that entry
		// alone, as robfig/cron reads it.
		if envLine.MatchString(first) && !(zonePrefix(first) && len(toks) > 1) {
			k, v, _ := strings.Cut(text, "=")
			v = strings.TrimSpace(v)
			if len(toks) > 1 && unquote(v) == v {
				bad(n, "%q: %s= followed by more words is ambiguous: quote the value (%s=\"...\") to set it for later commands, "+
					"or write it after the schedule (* * * * * %s=... command) to set it for one job", text, k, k, k)
				continue
			}
			v = unquote(v)
			if err := checkArgs("variable "+k, []string{k + "=" + v}); err != nil {
				bad(n, "%v: it could never be passed to a command", err)
				continue
			}
			if k == "TZ" && !posixTZ(v) {
				if _, err := time.LoadLocation(v); err != nil {
					bad(n, "TZ=%s: unknown time zone", v)
					continue
				}
			}
			if k == "CRON_TZ" {
				if _, err := time.LoadLocation(v); err != nil {
					bad(n, "CRON_TZ=%s: unknown time zone", v)
					continue
				}
				zone = v
				continue
			}
			env = append(env, k+"="+v)
			continue
		}

		e := crontabEntry{line: n, env: append([]string(nil), env...)}
		i := 0
		if strings.HasSuffix(first, ":") {
			name := strings.TrimSuffix(first, ":")
			if err := election.CheckName("job", name); err != nil {
				bad(n, "%v", err)
				continue
			}
			e.name, e.named = name, true
			i++
		} else if name, ok := spacedName(text, toks); ok {
			bad(n, "job name %q: no white space in a name; use ASCII letters, digits, '.', '_' and '-'", name)
			continue
		}
		if i < len(toks) && text[toks[i][0]] == '[' {
			from := toks[i][0]
			end := closingBracket(text[from:])
			if end < 0 {
				bad(n, "%q: options opened with '[' are not closed with ']'", text)
				continue
			}
			opts, rs, hs, atStart, norm, err := entryOptions(text[from+1 : from+end])
			if err != nil {
				bad(n, "%v", err)
				continue
			}
			e.opts, e.retry, e.hooks, e.options, e.jitter, e.atStart = opts, rs, hs, norm, rs.jitter, atStart
			for i < len(toks) && toks[i][0] < from+end+1 {
				i++
			}
			if toks[i-1][1] != from+end+1 {
				bad(n, "%q: write a space after the options' ']'", text)
				continue
			}
		}
		entryZone := zone
		if i < len(toks) {
			if tok := text[toks[i][0]:toks[i][1]]; zonePrefix(tok) {
				_, entryZone, _ = strings.Cut(tok, "=")
				if _, err := time.LoadLocation(entryZone); err != nil || entryZone == "" {
					bad(n, "%s: unknown time zone %q", tok, entryZone)
					continue
				}
				i++
				if i < len(toks) && text[toks[i][0]] == '[' {
					bad(n, "%q: options after %s: write them before it ([...] %s schedule command)", text, tok, tok)
					continue
				}
			}
		}
		if i >= len(toks) {
			bad(n, "%q: no schedule", text)
			continue
		}
		want := nfields
		if tok := text[toks[i][0]:toks[i][1]]; strings.HasPrefix(tok, "@") {
			want = 1
			if tok == "@every" {
				want = 2
			}
		}
		if i+want >= len(toks) {
			bad(n, "%q: want a schedule of %d fields and a command", text, want)
			continue
		}
		spec := text[toks[i][0]:toks[i+want-1][1]]
		if want == 2 {
			if err := checkEvery(text[toks[i+1][0]:toks[i+1][1]]); err != nil {
				bad(n, "%v", err)
				continue
			}
		}
		e.command = text[toks[i+want][0]:]
		if next := text[toks[i+want][0]:toks[i+want][1]]; optionsLike.MatchString(next) {
			bad(n, "%q: options after the schedule would be part of the command: write them before the schedule (%s %s ...)", text, next, spec)
			continue
		}
		if err := checkArgs("command", []string{e.command}); err != nil {
			bad(n, "%v: it could never start; put it in a script", err)
			continue
		}
		if err := checkExecSize([]string{"/bin/sh", "-c", e.command}, e.env); err != nil {
			bad(n, "%v: it could never start; put the values in a file", err)
			continue
		}
		if next := text[toks[i+want][0]:toks[i+want][1]]; want > 1 && fieldLike.MatchString(next) {
			hint := "a schedule has one field too many"
			if !seconds {
				hint = "six fields need --seconds"
			}
			bad(n, "command starts with %q, which looks like a schedule field: %s", next, hint)
			continue
		}
		fields := spec
		if entryZone != "" && spec != startSpec {
			spec = "CRON_TZ=" + entryZone + " " + spec
		}
		sched, err := parser.Parse(spec)
		if err != nil {
			if f := badField(parser.Parser, fields, seconds); f != "" {
				bad(n, "schedule %q: %s field: %v", spec, f, err)
			} else {
				bad(n, "schedule %q: %v", spec, err)
			}
			continue
		}
		e.spec = spec
		if spec == startSpec {
			e.opts = append(e.opts, cronx.WithRunAtStart())
		}
		e.gap = shortestGap(sched)
		if e.jitter != nil && *e.jitter > 0 && *e.jitter >= e.gap {
			bad(n, "[jitter=%v] is not shorter than the %v between the job's ticks: its runs would lose ticks", *e.jitter, e.gap)
			continue
		}
		if e.named {
			if prev, ok := named[e.name]; ok {
				bad(n, "job name %q is already used on line %d", e.name, prev)
				continue
			}
			named[e.name] = n
		} else {
			base := derivedJobName(spec, e.command)
			copies[base]++
			e.name = base
			if c := copies[base]; c > 1 {
				e.name = fmt.Sprintf("%s-%d", base, c)
			}
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			bad(n, "line longer than %d bytes (1 MiB)", maxLine)
			return nil, errors.Join(errs...)
		}
		return nil, unreadableError{fmt.Errorf("%s: %w", file, err)}
	}
	for _, e := range entries {
		if !e.named {
			if prev, ok := named[e.name]; ok {
				bad(e.line, "the name derived for this entry, %q, is already used on line %d; name the entry", e.name, prev)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no jobs", file)
	}
	return entries, nil
}

// derivedJobName names an unnamed entry after its command's program and a
// hash of the spec and the command, so every replica reading the same
// crontab derives the same name, and editing an entry makes it a new job.
func derivedJobName(spec, command string) string {
	word := command
	if i := strings.IndexAny(word, " \t"); i >= 0 {
		word = word[:i]
	}
	word = strings.Trim(nameChars.ReplaceAllString(path.Base(word), "-"), "-._")
	if word == "" {
		word = "job"
	}
	if len(word) > 40 {
		word = word[:40]
	}
	h := fnv.New32a()
	h.Write([]byte(spec))
	h.Write([]byte{0})
	h.Write([]byte(command))
	return fmt.Sprintf("%s-%08x", word, h.Sum32())
}

// shortestGap is the shortest time between two ticks of s over its next
// few hundred, the interval of an @every.
func shortestGap(s cronx.Schedule) time.Duration {
	if c, ok := s.(cronx.ConstantDelaySchedule); ok {
		return c.Delay
	}
	gap := time.Duration(math.MaxInt64)
	t := s.Next(time.Now())
	for range 500 {
		next := s.Next(t)
		if next.IsZero() {
			break
		}
		gap = min(gap, next.Sub(t))
		t = next
	}
	return gap
}

// maxLine is the longest crontab line baton reads.
const maxLine = 1 << 20

// posixTZ reports whether a TZ value is one the C library reads without
// the zone database: ":path", or a POSIX rule with an offset ("EST5EDT",
// "CET-1CEST,M3.5.0,M10.5.0/3"). Any other value names a zone, which must
// exist: the C library takes an unknown one for UTC without a word.
func posixTZ(v string) bool {
	return v == "" || strings.HasPrefix(v, ":") || strings.ContainsAny(v, "0123456789")
}

// zonePrefix reports whether tok is a TZ= or CRON_TZ= zone.
func zonePrefix(tok string) bool {
	return strings.HasPrefix(tok, "CRON_TZ=") || strings.HasPrefix(tok, "TZ=")
}

// spacedName returns the name of an entry whose name has white space in it
// ("my job: * * * * * x"): the words before the first one that ends in ':',
// when none of them can start a schedule.
func spacedName(text string, toks [][2]int) (string, bool) {
	for j, tk := range toks {
		tok := text[tk[0]:tk[1]]
		if fieldLike.MatchString(tok) || strings.HasPrefix(tok, "@") || zonePrefix(tok) {
			return "", false
		}
		if strings.HasSuffix(tok, ":") {
			return strings.TrimSuffix(text[:tk[1]], ":"), j > 0
		}
	}
	return "", false
}

// checkEvery refuses an @every interval that robfig/cron would silently
// round up to one second or down to whole seconds.
func checkEvery(arg string) error {
	d, err := time.ParseDuration(arg)
	switch {
	case err != nil:
		return fmt.Errorf("@every %s: %v", arg, err)
	case d < time.Second:
		return fmt.Errorf("@every %s: want an interval of at least 1s", arg)
	case d%time.Second != 0:
		return fmt.Errorf("@every %s: want a whole number of seconds", arg)
	}
	return nil
}

// tokens returns the [start, end) offsets of the space-separated words of s.
func tokens(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		space := r == ' ' || r == '\t'
		switch {
		case !space && start < 0:
			start = i
		case space && start >= 0:
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}
