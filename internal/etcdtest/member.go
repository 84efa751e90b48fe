package etcdtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one etcd server, run in a process of its own (see server/).
type Member struct {
	name    string
	dir     string
	client  url.URL
	peer    url.URL
	cluster string // the static --initial-cluster of the member's cluster
	token   string
	opts    Options
	// removeOnExit deletes the data directory when the test process exits:
	// for the shared member, which outlives every test.
	removeOnExit bool

	mu      sync.Mutex
	proc    *memberProcess // nil while stopped
	started bool           // the data dir holds a member that has run before
}

// Options configure a member of a test's own.
type Options struct {
	// TLS, when set, makes the member serve clients over TLS only.
	TLS *TLS
	// QuotaBackendBytes is the backend's quota, past which etcd raises its
	// NOSPACE alarm and refuses writes; 0 is etcd's default.
	QuotaBackendBytes int64
}

// Start runs a one-member cluster of the test's own and returns it once it
// serves clients. A test that stops, kills, pauses, wipes or restarts etcd,
// or changes what every client of it sees (auth, compaction, alarms),
// needs one; any other test takes a key space of the shared member
// (Shared), which costs nothing to start.
func Start(t testing.TB) *Member {
	t.Helper()
	return startCluster(t, 1, Options{}).Members[0]
}

// StartTLS runs a one-member cluster that serves clients over TLS only.
func StartTLS(t testing.TB, cfg TLS) *Member {
	t.Helper()
	return startCluster(t, 1, Options{TLS: &cfg}).Members[0]
}

// StartWith runs a one-member cluster configured by opts.
func StartWith(t testing.TB, opts Options) *Member {
	t.Helper()
	return startCluster(t, 1, opts).Members[0]
}

// Name is the member's name in its cluster.
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.client.String() }

// Endpoints returns the member's client URL as a one-element list.
func (m *Member) Endpoints() []string { return []string{m.client.String()} }

// Addr is the member's client address, host:port, for a proxy to dial.
func (m *Member) Addr() string { return m.client.Host }

// Client returns a client of this member that is closed at the end of the
// test.
func (m *Member) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return NewClient(t, m.Endpoints()...)
}

// Running reports whether the member is serving.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc != nil
}

// Stop shuts the member down gracefully: a raft leader hands its leadership
// to another member first.
func (m *Member) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return
	}
	m.proc.stop()
	m.proc = nil
}

// Kill stops the member as kill -9 does: no leadership transfer, its
// connections reset by the kernel.
func (m *Member) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return
	}
	m.proc.kill()
	m.proc = nil
}

// Pause stops the member's process with SIGSTOP until Resume, and returns
// once the kernel has stopped it: it answers nothing, and its connections
// stay open, as a stalled host's do. The test's end resumes it.
func (m *Member) Pause(t testing.TB) {
	t.Helper()
	m.signal(t, syscall.SIGSTOP)
	m.mu.Lock()
	pid := m.proc.cmd.Process.Pid
	m.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for !stopped(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("etcdtest: member %s not stopped within %v of SIGSTOP", m.name, startTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopped reports whether the process pid is stopped by a signal, as
// /proc says.
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's name, in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}

// Resume continues a paused member.
func (m *Member) Resume(t testing.TB) {
	t.Helper()
	m.signal(t, syscall.SIGCONT)
}

func (m *Member) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		t.Fatalf("etcdtest: %v to member %s, which is not running", sig, m.name)
	}
	if err := m.proc.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("etcdtest: %v to member %s: %v", sig, m.name, err)
	}
}

// Restart starts a stopped or killed member again on the same ports and data.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		t.Fatalf("etcdtest: restart of running member %s", m.name)
	}
	if err := m.runLocked(); err != nil {
		t.Fatalf("etcdtest: restart %s: %v", m.name, err)
	}
}

// Wipe stops the member, deletes its data and starts it again as a new,
// empty one-member cluster, as a bundled etcd on an emptyDir volume comes
// back after a restart. Only a member of a one-member cluster can be wiped
// alone.
func (m *Member) Wipe(t testing.TB) {
	t.Helper()
	m.Kill()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := os.RemoveAll(m.dir); err != nil {
		t.Fatalf("etcdtest: wipe %s: %v", m.name, err)
	}
	m.started = false
	m.token = fmt.Sprintf("%s-%d", m.token, time.Now().UnixNano())
	if err := m.runLocked(); err != nil {
		t.Fatalf("etcdtest: start wiped %s: %v", m.name, err)
	}
}

// IsRaftLeader reports whether the member is running and, by its own
// status, leads its cluster.
func (m *Member) IsRaftLeader() bool {
	if !m.Running() {
		return false
	}
	cfg := ClientConfig(m.Endpoint())
	cfg.DialTimeout = 0 // the request's deadline bounds the dial
	cli, err := clientv3.New(cfg)
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := cli.Status(ctx, m.Endpoint())
	return err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId
}

// runLocked starts the member and waits until it serves clients.
func (m *Member) runLocked() error {
	if err := m.startLocked(); err != nil {
		return err
	}
	if err := m.proc.waitReady(startTimeout); err != nil {
		m.proc.kill()
		m.proc = nil
		return err
	}
	return nil
}

// startLocked starts the member's process without waiting for it.
func (m *Member) startLocked() error {
	bin, err := serverBinary()
	if err != nil {
		return err
	}
	args := []string{
		"-name", m.name,
		"-data-dir", m.dir,
		"-client-url", m.client.String(),
		"-peer-url", m.peer.String(),
		"-initial-cluster", m.cluster,
		"-initial-cluster-token", m.token,
	}
	if m.started {
		args = append(args, "-existing")
	}
	if m.removeOnExit {
		args = append(args, "-remove-on-exit")
	}
	if lvl := os.Getenv("BATON_ETCDTEST_LOG"); lvl != "" {
		args = append(args, "-log-level", lvl)
	}
	if tls := m.opts.TLS; tls != nil {
		args = append(args, "-cert-file", tls.CertFile, "-key-file", tls.KeyFile)
		if tls.TrustedCAFile != "" {
			args = append(args, "-trusted-ca-file", tls.TrustedCAFile)
		}
	}
	if q := m.opts.QuotaBackendBytes; q > 0 {
		args = append(args, "-quota-backend-bytes", fmt.Sprint(q))
	}
	p, err := startProcess(m.name, bin, args)
	if err != nil {
		return err
	}
	m.proc = p
	m.started = true
	return nil
}
