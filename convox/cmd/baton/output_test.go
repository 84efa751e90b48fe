package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestCrontabLongLinesKeepTheirPrefix runs two jobs at once that each write
// a line of 200 000 bytes, of a letter of their own: the line comes out as
// lines of at most 64 KiB, each with its job's prefix and only its job's
// letter, however the two jobs' writes meet.
func TestCrontabLongLinesKeepTheirPrefix(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	var tab strings.Builder
	for _, job := range []string{"a", "b"} {
		tab.WriteString(job + ": * * * * * * head -c 200000 /dev/zero | tr '\\0' " + job + "; echo; echo done >> " + filepath.Join(dir, job) + "\n")
	}
	if err := os.WriteFile(file, []byte(tab.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startBaton(t, etcd.Env(), "crontab", "--seconds", file)
	until(t, 20*time.Second, "two runs of each job", func() bool {
		return len(readLines(filepath.Join(dir, "a"))) >= 2 && len(readLines(filepath.Join(dir, "b"))) >= 2
	})
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(20 * time.Second)
	written := map[string]int{}
	for _, line := range strings.Split(p.out.String(), "\n") {
		for _, job := range []string{"a", "b"} {
			body, ok := strings.CutPrefix(line, "["+job+"] ")
			if !ok {
				continue
			}
			if strings.Trim(body, job) != "" {
				t.Fatalf("a line of [%s] holds another job's output: %.80q…", job, body)
			}
			if len(body) > maxOutputLine {
				t.Fatalf("a line of [%s] of %d bytes, over %d", job, len(body), maxOutputLine)
			}
			written[job] += len(body)
		}
		if len(line) > 0 && (line[0] == 'a' || line[0] == 'b') {
			t.Fatalf("a line of output without its prefix: %.80q…", line)
		}
	}
	for _, job := range []string{"a", "b"} {
		if written[job] < 2*200000 {
			t.Errorf("[%s] wrote %d bytes, want two runs' 200000 each", job, written[job])
		}
	}
}

// TestCopyLinesCutsAtRuneBoundaries: a long line of multi-byte runes is cut
// between runes, so each piece is valid UTF-8, and into as many pieces as
// its length takes.
func TestCopyLinesCutsAtRuneBoundaries(t *testing.T) {
	for _, tc := range []struct {
		line   string
		pieces int
	}{
		{strings.Repeat("é", maxOutputLine), 2},       // exactly two buffers
		{"x" + strings.Repeat("é", maxOutputLine), 3}, // a rune across each cut
	} {
		var out bytes.Buffer
		copyLines(&out, strings.NewReader(tc.line+"\nshort\n"), "[j] ")
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != tc.pieces+1 || lines[tc.pieces] != "[j] short" {
			t.Fatalf("%d lines, want the long line in %d and the short one", len(lines), tc.pieces)
		}
		got := ""
		for _, l := range lines[:tc.pieces] {
			body, ok := strings.CutPrefix(l, "[j] ")
			if !ok || body == "" || !utf8.ValidString(body) {
				t.Fatalf("piece %.20q… is not whole runes after the prefix", l)
			}
			got += body
		}
		if got != tc.line {
			t.Fatal("the pieces do not make up the line")
		}
	}
}
