package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
)

// Before a member starts, baton makes sure its data directory is its own
// and that the database in it can be read, so that either fault is one
// line naming the directory and exit status 1, never a hang or a stack
// trace from deep inside etcd.

// errDataDirInUse is returned when another process holds the data directory.
var errDataDirInUse = errors.New("in use by another baton etcd")

// lockDataDir creates dir if need be and takes an exclusive lock on it,
// held until release or the process's end (the kernel drops it even after
// kill -9). A second member on the same directory fails at once rather
// than wait for the database's own lock, which it would do for ever.
func lockDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s: %w", dir, errDataDirInUse)
		}
		return nil, fmt.Errorf("data dir %s: lock: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// dbCheckTimeout bounds the check of a database; a larger one than baton
// keeps would need longer, and etcd's own start would read it anyway.
const dbCheckTimeout = time.Minute

// checkDatabase reads every page of the member's database, if it has one,
// in a child process (`baton _etcd-check-db`): the database library panics
// on a corrupt page in a goroutine of its own, which no recover can catch,
// so only a process of its own can fail and be reported cleanly.
// It returns the database's consistent index: the last entry of the
// write-ahead log applied to it (0 without a database).
func checkDatabase(ctx context.Context, dir string) (uint64, error) {
	db := filepath.Join(dir, "member", "snap", "db")
	if _, err := os.Stat(db); err != nil {
		return 0, nil // no database yet: etcd creates it
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find baton's own executable: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, dbCheckTimeout)
	defer cancel()
	var out, diag bytes.Buffer
	cmd := exec.CommandContext(ctx, self, "_etcd-check-db", db)
	cmd.Stdout, cmd.Stderr = &out, &diag
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("data dir %s: database %s cannot be read, corrupt or held by another process (%s); restore the data dir from a backup, or move it away to start an empty member",
			dir, db, firstLine(diag.String()+out.String(), err))
	}
	index, err := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("data dir %s: database %s: the check printed %q, not its consistent index", dir, db, out.String())
	}
	return index, nil
}

// firstLine is the gist of the check's output: its first line, less the
// "panic: " of a crash.
func firstLine(out string, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimPrefix(strings.TrimSpace(line), "panic: ")
	if line == "" {
		return err.Error()
	}
	return line
}

func init() {
	register(command{name: "_etcd-check-db", run: func(_ context.Context, env *environ, args []string) int {
		if len(args) != 1 {
			fmt.Fprintln(env.stderr, "baton _etcd-check-db: want one database file")
			return exitUsage
		}
		index, err := checkDB(args[0])
		if err != nil {
			fmt.Fprintln(env.stderr, err)
			return exitFailure
		}
		fmt.Fprintln(env.stdout, index)
		return exitOK // without closing the database; see checkDB
	}})
}

// checkDB opens the database as etcd does and reads every key of every
// bucket, as a hash of it, which panics on a corrupt page. It does not
// close the database, which would commit a transaction: the process exits
// at once. It returns the database's consistent index.
func checkDB(path string) (uint64, error) {
	cfg := backend.DefaultBackendConfig(zap.NewNop())
	cfg.Path = path
	cfg.Timeout = time.Second // the lock of another process
	be := backend.New(cfg)
	if _, err := be.Hash(nil); err != nil {
		return 0, err
	}
	index, _ := schema.ReadConsistentIndex(be.ReadTx())
	return index, nil
}
