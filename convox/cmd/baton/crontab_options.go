package main

import (
	"fmt"
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

// entryOption reads one KEY=VALUE of an entry's options.
func entryOption(kv string) (cronx.JobOption, error) {
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
	case "jitter":
		d, err := nonNegative(value)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		return cronx.WithJitter(d), nil
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
const optionKeys = "overlap, timeout, jitter, dst"

// entryOptions reads the options between an entry's brackets, and returns
// them and their text as --check prints it.
func entryOptions(inner string) ([]cronx.JobOption, string, error) {
	words := strings.FieldsFunc(inner, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	if len(words) == 0 {
		return nil, "", fmt.Errorf("empty options []: write KEY=VALUE inside the brackets, or leave them out")
	}
	var opts []cronx.JobOption
	for _, w := range words {
		opt, err := entryOption(w)
		if err != nil {
			return nil, "", err
		}
		opts = append(opts, opt)
	}
	return opts, "[" + strings.Join(words, " ") + "]", nil
}

// parseOverlap reads an overlap policy, as --overlap and overlap= take it.
func parseOverlap(v string) (cronx.Overlap, error) {
	switch v {
	case "allow":
		return cronx.Allow, nil
	case "forbid":
		return cronx.Forbid, nil
	}
	return 0, fmt.Errorf("%q: want allow or forbid", v)
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
