package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// FreePorts returns n distinct free TCP ports on 127.0.0.1, for servers a
// test starts: an etcd member, a baton etcd process, a redis-server. The
// ports are released before the server binds them, so they are drawn from
// below the kernel's ephemeral range: no connection made meanwhile, and no
// listener on port 0, by this test or any process on the machine, can be
// given one of them.
//
// A port given is reserved for the rest of the test process, across
// processes too (a lock on its byte of one file in the temporary
// directory, which the kernel drops when the process ends): no other test
// process, such as the package tests go test runs beside this one, is
// given it, nor a later call here, while the member that has it is
// stopped or killed and its port free to be restarted on.
func FreePorts(n int) ([]int, error) {
	low := firstEphemeralPort()
	if low <= minPort {
		return nil, fmt.Errorf("etcdtest: the ephemeral ports start at %d: no room below them for a test's ports", low)
	}
	var ports []int
	for misses := 0; len(ports) < n; misses++ {
		if misses == 1000 {
			return nil, fmt.Errorf("etcdtest: %d of %d free ports found between %d and %d, then 1000 taken in a row", len(ports), n, minPort, low)
		}
		p := minPort + rand.IntN(low-minPort)
		ok, err := reserved.take(p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // given before, here or to another test process
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken by a server outside the tests; stays reserved
		}
		defer l.Close()
		ports, misses = append(ports, p), -1
	}
	return ports, nil
}

// minPort is the lowest port FreePorts gives, above those of well-known
// services.
const minPort = 10000

// reservations are the ports this process has been given, each held by a
// write lock on its byte of one file shared by every test process of the
// machine's user. The mutex guards the file and the set: record locks are
// the process's, so the set is what keeps two calls here apart, and the
// file stays open for the process's life, as closing any descriptor of it
// would drop every lock.
type reservations struct {
	mu   sync.Mutex
	file *os.File
	held map[int]bool
}

var reserved = &reservations{held: map[int]bool{}}

// portsLockFile is the file whose byte p stands for port p.
var portsLockFile = filepath.Join(os.TempDir(), "baton-etcdtest-ports.lock")

// take reserves port p, reporting false when this process or another holds
// it already.
func (r *reservations) take(p int) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[p] {
		return false, nil
	}
	if r.file == nil {
		f, err := os.OpenFile(portsLockFile, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return false, fmt.Errorf("etcdtest: the ports' lock file: %w", err)
		}
		r.file = f
	}
	lock := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: int64(p), Len: 1}
	switch err := syscall.FcntlFlock(r.file.Fd(), syscall.F_SETLK, &lock); err {
	case nil:
		r.held[p] = true
		return true, nil
	case syscall.EAGAIN, syscall.EACCES:
		return false, nil
	default:
		return false, fmt.Errorf("etcdtest: lock port %d in %s: %w", p, portsLockFile, err)
	}
}

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
