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
// Options are KEY=VALUE, separated by spaces or commas; a VALUE with spaces
// or commas in it is quoted ("..." or '...'): on-failure="./alert --to ops".
// Every one is checked when the file is read.

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
// or, for attempts= and backoff=, into rs, and for the hooks into hs.
func entryOption(kv string, rs *retrySetting, hs *hookSetting) (cronx.JobOption, error) {
	key, value, ok := strings.Cut(kv, "=")
	if !ok || value == "" {
		return nil, fmt.Errorf("option %q: want KEY=VALUE, KEY one of %s", kv, optionKeys)
	}
	switch key {
	case "on-failure", "on-success":
		command := unquote(value)
		if err := checkArgs("option "+key+" command", []string{command}); err != nil {
			return nil, fmt.Errorf("%v: it could never start; put it in a script", err)
		}
		if key == "on-failure" {
			hs.onFailure = &command
		} else {
			hs.onSuccess = &command
		}
		return nil, nil
	case "hook-timeout":
		d, err := time.ParseDuration(value)
		if err == nil && d <= 0 {
			err = fmt.Errorf("%s: want a duration above 0", value)
		}
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", kv, err)
		}
		hs.timeout = &d
		return nil, nil
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
	case "catch-up":
		return catchUpOption(kv, value)
	case "recover":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("option %s: want a whole number of runs again of 0 or more", kv)
		}
		return cronx.WithRecovery(n), nil
	case "at-start":
		switch value {
		case "yes":
			return cronx.WithRunAtStart(), nil
		case "no":
			return nil, nil
		}
		return nil, fmt.Errorf("option %s: want yes or no", kv)
	case "start", "end", "max-runs":
		return boundsOption(key, kv, value)
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
const optionKeys = "overlap, timeout, attempts, backoff, jitter, dst, pause-after, recover, at-start, on-failure, on-success, hook-timeout, catch-up, start, end, max-runs"

// entryOptions reads the options between an entry's brackets, and returns
// them, whether at-start=yes is one, and their text as --check prints it.
func entryOptions(inner string) ([]cronx.JobOption, retrySetting, hookSetting, bool, string, error) {
	var (
		rs retrySetting
		hs hookSetting
	)
	words, err := optionWords(inner)
	if err != nil {
		return nil, rs, hs, false, "", err
	}
	if len(words) == 0 {
		return nil, rs, hs, false, "", fmt.Errorf("empty options []: write KEY=VALUE inside the brackets, or leave them out")
	}
	var opts []cronx.JobOption
	given := map[string]string{}
	for _, w := range words {
		key, _, _ := strings.Cut(w, "=")
		if prev, ok := given[key]; ok {
			return nil, rs, hs, false, "", fmt.Errorf("option %s given twice (%s and %s): give each option once", key, prev, w)
		}
		given[key] = w
		opt, err := entryOption(w, &rs, &hs)
		if err != nil {
			return nil, rs, hs, false, "", err
		}
		if opt != nil {
			opts = append(opts, opt)
		}
	}
	return opts, rs, hs, given["at-start"] == "at-start=yes", "[" + strings.Join(words, " ") + "]", nil
}

// optionWords splits the options between an entry's brackets at spaces,
// tabs and commas outside quotes.
func optionWords(inner string) ([]string, error) {
	var (
		words []string
		word  strings.Builder
	)
	open := eachRune(inner, func(_ int, r rune, quoted bool) bool {
		if !quoted && (r == ' ' || r == '\t' || r == ',') {
			if word.Len() > 0 {
				words = append(words, word.String())
				word.Reset()
			}
			return true
		}
		word.WriteRune(r)
		return true
	})
	if open != 0 {
		return nil, fmt.Errorf("options [%s]: a %c is not closed", inner, open)
	}
	if word.Len() > 0 {
		words = append(words, word.String())
	}
	return words, nil
}

// closingBracket is the index in s, which opens an entry's options with
// '[', of the ']' that closes them, outside quotes; -1 if none does.
func closingBracket(s string) int {
	at := -1
	eachRune(s, func(i int, r rune, quoted bool) bool {
		if !quoted && r == ']' {
			at = i
			return false
		}
		return true
	})
	return at
}

// eachRune calls f with each rune of s, at its index, and whether it is
// quoted: inside '…' or "…", the quotes included. It stops when f returns
// false, and returns the quote left open then, 0 for none.
func eachRune(s string, f func(i int, r rune, quoted bool) bool) rune {
	var quote rune
	for i, r := range s {
		quoted := quote != 0
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote, quoted = r, true
		}
		if !f(i, r, quoted) {
			return quote
		}
	}
	return quote
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
	case "buffer-one":
		return cronx.BufferOne, nil
	case "buffer-all":
		return cronx.BufferAll, nil
	}
	return 0, fmt.Errorf("%q: want allow, forbid, replace, buffer-one or buffer-all", v)
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
