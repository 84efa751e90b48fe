package etcdtest

import "github.com/batonhq/baton/internal/testbin"

// serverBinary returns the path of the member's program (server/), built
// once per machine for each version of its source, without the race
// detector whatever the test binary was built with: etcd is the harness
// here, not the subject.
func serverBinary() (string, error) {
	return testbin.Path(testbin.Build{Pkg: "./internal/etcdtest/server", Source: []string{"internal/etcdtest/server"}})
}
