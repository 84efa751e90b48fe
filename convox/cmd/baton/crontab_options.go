package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
)

// An entry's policy, in square brackets after its name, overrides the
// flags for that entry alone:
//
//	report: [timeout=10m overlap=forbid] 0 3 * * * node report.js
//
// Options are KEY=VALUE, separated by spaces or commas; every one is
// checked when the file is read.

// retrySetting is an entry's attempts= and backoff=, each unset (nil)
// unless given: they combine with the flags into one cronx.WithRetries.
// jitter= is kept too, to be checked against the entry's schedule.
type retrySetting struct {
	attempts *int
	backoff  *time.Duration
	jitter   *time.Duration
}

// retries returns the WithRetries of the flags' attempts and backoff,
// overridden by what the entry gives.
func (s retrySetting) retries(attempts int, backoff time.Duration) cronx.JobOption {
	if s.attempts != nil {
		attempts = *s.attempts
	}
	if s.backoff != nil {
		backoff = *s.backoff
	}
	return cronx.WithRetries(attempts, backoff)
}

// entryOption reads one KEY=VALUE of an entry's options into its JobOption
// or, for attempts= and backoff=, into rs.
func entryOption(kv string, rs *retrySetting) (cronx.JobOption, error) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok || value == "" {
		return nil, fmt.Errorf("option %q: want KEY=VALUE, KEY one of %s", kv, optionKeys)
	}
	switch key {
	case "overlap":
		o, err := parseOverlap(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		return cronx.WithOverlap(o), nil
	case "timeout":
		d, err := nonNegative(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		return cronx.WithTimeout(d), nil
	case "attempts":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("option %s: want a whole number of 1 or more", kv)
		}
		rs.attempts = &n
		return nil, nil
	case "backoff":
		d, err := nonNegative(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		rs.backoff = &d
		return nil, nil
	case "jitter":
		d, err := nonNegative(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		rs.jitter = &d
		return cronx.WithJitter(d), nil
	case "pause-after":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("option %s: want a whole number of failures of 1 or more", kv)
		}
		return cronx.WithPauseAfter(n), nil
	case "dst":
		rule, err := parseDST(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		return cronx.WithDST(rule), nil
	}
	return nil, fmt.Errorf("option %q: unknown; want one of %s", key, optionKeys)
}

// optionKeys lists the keys entryOption knows, for its errors.
const optionKeys = "overlap, timeout, attempts, backoff, jitter, dst, pause-after"

// entryOptions reads the options between an entry's brackets, and returns
// them and their text as --check prints it.
func entryOptions(inner string) ([]cronx.JobOption, retrySetting, string, error) {
	var rs retrySetting
	words := strings.FieldsFunc(inner, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	if len(words) == 0 {
		return nil, rs, "", fmt.Errorf("empty options []: write KEY=VALUE inside the brackets, or leave them out")
	}
	var opts []cronx.JobOption
	given := map[string]string{}
	for _, w := range words {
		key, _, _ := strings.Cut(w, "=")
		if prev, ok := given[key]; ok {
			return nil, rs, "", fmt.Errorf("option %s given twice (%s and %s): give each option once", key, prev, w)
		}
		given[key] = w
		opt, err := entryOption(w, &rs)
		if err != nil {
			return nil, rs, "", err
		}
		if opt != nil {
			opts = append(opts, opt)
		}
	}
	return opts, rs, "[" + strings.Join(words, " ") + "]", nil
}

// parseOverlap reads an overlap policy, as --overlap and overlap= take it.
func parseOverlap(v string) (cronx.Overlap, error) {
	switch v {
	case "allow":
		return cronx.Allow, nil
	case "forbid":
		return cronx.Forbid, nil
	case "replace":
		return cronx.Replace, nil
	}
	return 0, fmt.Errorf("%q: want allow, forbid or replace", v)
}

// parseDST reads a daylight-saving rule, as --dst and dst= take it.
func parseDST(v string) (cronx.DST, error) {
	switch v {
	case "robfig":
		return cronx.DSTAsRobfig, nil
	case "once":
		return cronx.DSTOnce, nil
	}
	return 0, fmt.Errorf("%q: want robfig or once", v)
}

// nonNegative reads a duration of 0 or more.
func nonNegative(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("%s: must not be negative", v)
	}
	return d, nil
}
