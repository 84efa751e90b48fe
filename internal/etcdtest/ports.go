package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts returns n distinct free TCP ports on 127.0.0.1, for servers a
// test starts: an etcd member, a baton etcd process, a redis-server. The
// ports are released before the server binds them, so they are drawn from
// below the kernel's ephemeral range: no connection made meanwhile, and no
// listener on port 0, by this test or any process on the machine, can be
// given one of them.
func FreePorts(n int) ([]int, error) {
	low := firstEphemeralPort()
	if low <= minPort {
		return nil, fmt.Errorf("etcdtest: the ephemeral ports start at %d: no room below them for a test's ports", low)
	}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("etcdtest: no %d free ports between %d and %d in 1000 tries", n, minPort, low)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", minPort+rand.IntN(low-minPort)))
		if err != nil {
			continue // taken
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// minPort is the lowest port FreePorts gives, above those of well-known
// services.
const minPort = 10000

// firstEphemeralPort reads the first port the kernel gives to outgoing
// connections and to listeners on port 0; Linux's default without it.
func firstEphemeralPort() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if p, err := strconv.Atoi(f[0]); err == nil {
				return p
			}
		}
	}
	return 32768
}
