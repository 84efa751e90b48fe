package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.uber.org/zap"
)

// stoppedMember is a one-member etcd that ran once and stopped: its data
// dir holds a database and a write-ahead log.
func stoppedMember(t *testing.T) etcdMember {
	t.Helper()
	m := etcdMembers(t, 1)[0]
	p := startBaton(t, nil, m.args("")...)
	p.waitOutput("member etcd-0 ready", 30*time.Second)
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(10 * time.Second)
	return m
}

// TestEtcdCorruptDatabaseIsOneLine: a member whose database is damaged
// exits 1 with one line naming its data dir, not a stack trace.
func TestEtcdCorruptDatabaseIsOneLine(t *testing.T) {
	t.Parallel()
	m := stoppedMember(t)

	db := filepath.Join(m.dir, "member", "snap", "db")
	f, err := os.OpenFile(db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Four pages of noise after the two meta pages: the pages of the data.
	garbage := make([]byte, 4*4096)
	rand.NewChaCha8([32]byte{1}).Read(garbage)
	if _, err := f.WriteAt(garbage, 2*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()

	code, out := runBaton(t, nil, m.args("")...)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if strings.Contains(out, "goroutine ") || !strings.Contains(out, "baton etcd: data dir "+m.dir+": database") {
		t.Errorf("want one line naming the data dir, no stack trace:\n%s", out)
	}
}

// TestEtcdCorruptWALIsOneLine: a member whose write-ahead log is damaged
// exits 1 with baton's one line naming its data dir, and no JSON line of
// etcd's beside it.
func TestEtcdCorruptWALIsOneLine(t *testing.T) {
	t.Parallel()
	m := stoppedMember(t)

	wals, err := filepath.Glob(filepath.Join(m.dir, "member", "wal", "*.wal"))
	if err != nil || len(wals) == 0 {
		t.Fatalf("no WAL in %s: %v", m.dir, err)
	}
	f, err := os.OpenFile(wals[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 2000)
	rand.NewChaCha8([32]byte{2}).Read(garbage)
	if _, err := f.WriteAt(garbage, 64); err != nil {
		t.Fatal(err)
	}
	f.Close()

	code, out := runBaton(t, nil, m.args("")...)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "baton etcd: data dir "+m.dir+": write-ahead log") {
		t.Errorf("want baton's one line naming the data dir:\n%s", out)
	}
}

// TestEtcdWALCutOrEmptiedIsOneLine: a member whose write-ahead log was cut
// to 100 bytes (before its metadata), zeroed or emptied exits 1 at once
// with one line naming its data dir, rather than wait for peers for ever
// or crash on a nil pointer.
func TestEtcdWALCutOrEmptiedIsOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(f *os.File) error
	}{
		{"cut to 100 bytes", func(f *os.File) error { return f.Truncate(100) }},
		{"zeroed", func(f *os.File) error {
			st, err := f.Stat()
			if err != nil {
				return err
			}
			_, err = f.WriteAt(make([]byte, st.Size()), 0)
			return err
		}},
		{"empty", func(f *os.File) error { return f.Truncate(0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := stoppedMember(t)
			wals, err := filepath.Glob(filepath.Join(m.dir, "member", "wal", "*.wal"))
			if err != nil || len(wals) == 0 {
				t.Fatalf("no WAL in %s: %v", m.dir, err)
			}
			for _, w := range wals {
				f, err := os.OpenFile(w, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.damage(f); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			p := startBaton(t, nil, m.args("")...)
			code := p.wait(time.Minute) // for ever, unmended
			out := p.out.String()
			if lines := strings.Split(strings.TrimSpace(out), "\n"); code != exitFailure || len(lines) != 1 ||
				!strings.HasPrefix(lines[0], "baton etcd: data dir "+m.dir+": write-ahead log") {
				t.Errorf("exit %d, want %d and one line naming the data dir:\n%s", code, exitFailure, out)
			}
		})
	}
}

// TestEtcdSecondMemberOnOneDataDirFailsAtOnce: a second member on a data
// dir in use exits 1 at once, and the first keeps serving.
func TestEtcdSecondMemberOnOneDataDirFailsAtOnce(t *testing.T) {
	t.Parallel()
	ms := etcdMembers(t, 2)
	first := startBaton(t, nil, ms[0].args("")...)
	first.waitOutput("member etcd-0 ready", 30*time.Second)
	second := ms[1]
	second.name, second.dir = ms[0].name, ms[0].dir
	p := startBaton(t, nil, second.args("")...)
	if code := p.wait(10 * time.Second); code != exitFailure {
		t.Errorf("the second member exited %d, want %d", code, exitFailure)
	}
	if out := p.out.String(); !strings.Contains(out, "data dir "+ms[0].dir+": in use by another baton etcd") {
		t.Errorf("the second member does not say its data dir is in use:\n%s", out)
	}
	cli := newTestClient(t, ms[0].client)
	defer cli.Close()
	if err := put(cli, "/baton/x"); err != nil {
		t.Errorf("the first member after the second's attempt: %v", err)
	}
}

// TestEtcdDatabaseHeldElsewhereFailsAtOnce: a database another program
// holds (an etcd that is not baton's, on the same directory) is an error
// within seconds, not a wait deaf to SIGTERM.
func TestEtcdDatabaseHeldElsewhereFailsAtOnce(t *testing.T) {
	t.Parallel()
	m := stoppedMember(t)

	cfg := backend.DefaultBackendConfig(zap.NewNop())
	cfg.Path = filepath.Join(m.dir, "member", "snap", "db")
	db := backend.New(cfg)
	defer db.Close()
	again := startBaton(t, nil, m.args("")...)
	if code := again.wait(20 * time.Second); code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if out := again.out.String(); !strings.Contains(out, "held by another process") || !strings.Contains(out, m.dir) {
		t.Errorf("want one line naming the data dir:\n%s", out)
	}
}
