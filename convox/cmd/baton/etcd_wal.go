package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// checkWAL reads the member's write-ahead log, if it has one, as etcd will
// at its start, without changing it: from the newest snapshot the log and
// the snap directory agree on, every record, and the member's metadata.
// etcd itself stops with a fatal log line or a nil pointer dereference on
// a log that is damaged or empty, and on a log cut before its metadata it
// starts as a member of no known ID and waits for peers for ever; baton
// says which, with the directory, before etcd starts. A log whose last
// record is torn (a write cut by a crash) is read up to it, as etcd
// repairs it, but it must still reach applied, the database's consistent
// index: etcd applies an entry only once the log holds it on disk, so a
// log that ends before it lost what it had synced.
func checkWAL(dir string, applied uint64) (err error) {
	walDir := filepath.Join(dir, "member", "wal")
	if !wal.Exist(walDir) {
		return nil // no log yet: etcd creates it
	}
	defer func() {
		if r := recover(); r != nil { // a record that does not decode
			err = fmt.Errorf("%v", r)
		}
		if err != nil {
			err = fmt.Errorf("data dir %s: write-ahead log %s cannot be read, damaged or cut short (%v); restore the data dir from a backup, or move it away to start an empty member (a member of three then rejoins its cluster)", dir, walDir, err)
		}
	}()
	lg := zap.NewNop()
	snaps, err := wal.ValidSnapshotEntries(lg, walDir)
	if err != nil {
		return err
	}
	var from walpb.Snapshot
	switch s, err := snap.New(lg, filepath.Join(dir, "member", "snap")).LoadNewestAvailable(snaps); {
	case err == nil:
		from.Index, from.Term = new(s.GetMetadata().GetIndex()), new(s.GetMetadata().GetTerm())
	case !errors.Is(err, snap.ErrNoSnapshot):
		return err
	}
	w, err := wal.OpenForRead(lg, walDir, &from)
	if err != nil {
		return err
	}
	defer w.Close()
	raw, _, ents, err := w.ReadAll()
	if err != nil {
		return err
	}
	last := from.GetIndex()
	if len(ents) > 0 {
		last = ents[len(ents)-1].GetIndex()
	}
	if last < applied {
		return fmt.Errorf("it ends at entry %d, before entry %d, which the database applied", last, applied)
	}
	var md etcdserverpb.Metadata
	if err := proto.Unmarshal(raw, &md); err != nil {
		return fmt.Errorf("member metadata: %w", err)
	}
	if md.GetNodeID() == 0 || md.GetClusterID() == 0 {
		return errors.New("no member metadata in it")
	}
	return nil
}
