package main

import (
	"fmt"

	"github.com/batonhq/baton/cronx"
)

// catchUpOption reads an entry's catch-up=DURATION: how old a tick missed
// while etcd or every replica was down may be and still run, once, when
// the cluster is back (cronx.WithCatchUp). It wins over --misfire and
// --misfire-grace for the entry.
func catchUpOption(kv, value string) (cronx.JobOption, error) {
	d, err := nonNegative(value)
	if err != nil {
		return nil, fmt.Errorf("option %s: %w", kv, err)
	}
	return cronx.WithCatchUp(d), nil
}
