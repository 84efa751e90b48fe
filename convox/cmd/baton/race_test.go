//go:build race

package main

// raceEnabled: this test binary was built with -race.
const raceEnabled = true
