package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestATickProfileEndsTheWorkersAndEndsByItself: the crowded tick's
// profile closes the worker's whole-run profile, which is then complete,
// and ends at its time with no stop called.
func TestATickProfileEndsTheWorkersAndEndsByItself(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs-1")
	p := &cpuProfile{path: path}
	if err := p.start(".cpu"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	if err := p.tick(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + ".cpu"); err != nil || fi.Size() == 0 {
		t.Fatalf("the whole run's profile once the tick's started: %v, %v", fi, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		writing := p.f != nil
		p.mu.Unlock()
		if !writing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tick's profile was still being written 10s after its end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fi, err := os.Stat(path + ".tick.cpu"); err != nil || fi.Size() == 0 {
		t.Fatalf("the tick's profile: %v, %v", fi, err)
	}
}
