package manifest

import (
	"reflect"
	"testing"
)

func TestManifestCommandWords(t *testing.T) {
	tests := []struct {
		cmd                   string
		programs              []string
		baton, etcd, runsOnce bool
	}{
		{cmd: "node server.js", programs: []string{"node"}},
		{cmd: "baton crontab crontab", programs: []string{"baton"}, baton: true},
		{cmd: `sh -c "baton crontab crontab & exec node server.js"`, programs: []string{"sh", "baton", "node"}, baton: true},
		{cmd: "bash -c 'LOG=1 /usr/local/bin/baton run --once x --ttl 1h -- bin/x' ignored", programs: []string{"bash", "baton"}, baton: true, runsOnce: true},
		{cmd: "baton run --once=x --ttl 1h -- bin/x", programs: []string{"baton"}, baton: true, runsOnce: true},
		{cmd: "baton run --leader x -- bin/x --once", programs: []string{"baton"}, baton: true},
		{cmd: "bin/x && baton run --once x --ttl 1m -- y", programs: []string{"x", "baton"}, baton: true, runsOnce: true},
		{cmd: "baton etcd --name etcd", programs: []string{"baton"}, etcd: true},
		{cmd: "/usr/local/bin/etcd --name etcd", programs: []string{"etcd"}, etcd: true},
		{cmd: "node server.js --etcd etcd:2379", programs: []string{"node"}},
		{cmd: "echo baton", programs: []string{"echo"}},
		{cmd: `sh -c "node a.js" sh x; baton crontab c`, programs: []string{"sh", "node", "baton"}, baton: true},
		{cmd: "", programs: nil},
	}
	for _, tt := range tests {
		var programs []string
		for _, inv := range invocations(tt.cmd) {
			programs = append(programs, inv.program)
		}
		if !reflect.DeepEqual(programs, tt.programs) {
			t.Errorf("%q runs %q, want %q", tt.cmd, programs, tt.programs)
		}
		if got := runsBaton(tt.cmd); got != tt.baton {
			t.Errorf("runsBaton(%q) = %v, want %v", tt.cmd, got, tt.baton)
		}
		if got := runsEtcd(tt.cmd); got != tt.etcd {
			t.Errorf("runsEtcd(%q) = %v, want %v", tt.cmd, got, tt.etcd)
		}
		if got := runsOnce(tt.cmd); got != tt.runsOnce {
			t.Errorf("runsOnce(%q) = %v, want %v", tt.cmd, got, tt.runsOnce)
		}
	}
}
