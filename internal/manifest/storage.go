package manifest

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Storage is where a new etcd service keeps its data.
type Storage int

const (
	// Ephemeral keeps etcd's data on an emptyDir, which lives as long as
	// its pod: every new process (a promoted release of the app that runs
	// it, a node drained or lost) starts it empty, and Lost is lost; a
	// restart of the container in its pod, by its liveness check, keeps it.
	Ephemeral Storage = iota
	// EFS keeps etcd's data on an awsEfs volume, which outlives restarts.
	// It needs the rack's EFS driver: convox rack params set
	// efs_csi_driver_enable=true.
	EFS
)

// Lost is what baton forgets when its etcd comes back empty.
const Lost = "pauses, run --once claims (a retried timer then runs again), run history and held locks"

// EFSDriver is the command that enables the EFS driver an EFS volume needs.
const EFSDriver = "convox rack params set efs_csi_driver_enable=true"

// ParseStorage reads a --storage value: "efs" or "ephemeral".
func ParseStorage(s string) (Storage, error) {
	switch s {
	case "ephemeral":
		return Ephemeral, nil
	case "efs":
		return EFS, nil
	}
	return 0, fmt.Errorf("storage %q: want efs (a persistent awsEfs volume) or ephemeral (an emptyDir, lost with its process)", s)
}

func (s Storage) String() string {
	if s == EFS {
		return "efs"
	}
	return "ephemeral"
}

// comment is what the head comment of an etcd service says of its data.
func (s Storage) comment() string {
	if s == EFS {
		return "Its data is on an awsEfs volume, which outlives restarts (the rack needs " + EFSDriver + ")."
	}
	return "Its data is on an emptyDir: each new process (a release, a node drained) starts it empty, and baton forgets " + Lost + "."
}

// volume is a new etcd service's volumeOptions, mounted on its data dir.
func volume(s Storage) []*yaml.Node {
	vol := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	vol.Content = append(vol.Content, kv("id", scalar("etcd-data"))...)
	kind := "emptyDir"
	if s == EFS {
		kind = "awsEfs"
		vol.Content = append(vol.Content, kv("accessMode", scalar("ReadWriteOnce"))...)
	}
	vol.Content = append(vol.Content, kv("mountPath", scalar(dataDir))...)
	item := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv(kind, vol)}
	return kv("volumeOptions", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}})
}

// wrap breaks text into lines of at most width bytes, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
