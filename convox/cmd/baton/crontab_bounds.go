package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/cronx"
)

// boundsOption reads an entry's start=TIME, end=TIME (RFC 3339) or
// max-runs=N: the ticks it runs from, the ticks it stops before, and how
// many it runs in all, cluster-wide (cronx.WithStartAt, WithEndAt,
// WithMaxRuns).
func boundsOption(key, kv, value string) (cronx.JobOption, error) {
	if key == "max-runs" {
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("option %s: want a whole number of runs of 1 or more", kv)
		}
		return cronx.WithMaxRuns(n), nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return nil, fmt.Errorf("option %s: want a time in RFC 3339, as 2026-12-24T18:00:00Z: %w", kv, err)
	}
	if key == "start" {
		return cronx.WithStartAt(t), nil
	}
	return cronx.WithEndAt(t), nil
}
