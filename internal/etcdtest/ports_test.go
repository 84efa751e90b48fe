package etcdtest

import (
	"fmt"
	"net"
	"testing"
)

// TestFreePortsAreBelowTheEphemeralRange: the ports are distinct, free, and
// from below the range the kernel hands to connections and port-0
// listeners, so nothing else is given one before the server binds it. Not
// parallel: the package's other tests start members on ports FreePorts
// gives them, and one could bind a port of these between FreePorts and the
// check that it is free.
func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	ports, err := FreePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	low, seen := firstEphemeralPort(), map[int]bool{}
	for _, p := range ports {
		if p < minPort || p >= low || seen[p] {
			t.Errorf("port %d of %v: want distinct ports in [%d, %d)", p, ports, minPort, low)
		}
		seen[p] = true
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
	if len(ports) != 6 {
		t.Errorf("%d ports, want 6", len(ports))
	}
}
