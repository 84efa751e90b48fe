package etcdtest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy between one client and an etcd member that can add
// latency, blackhole traffic (accept and hold connections, forward nothing),
// and cut every open connection — so a test can partition one replica from
// etcd while the others keep going.
type Proxy struct {
	ln net.Listener

	mu        sync.Mutex
	target    string
	latency   time.Duration
	blackhole bool
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
}

// NewProxy listens on a free 127.0.0.1 port and forwards to target
// (host:port). It is closed by t.Cleanup.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Endpoint is the proxy's URL for an etcd client.
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Pass forwards traffic with no added latency.
func (p *Proxy) Pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency, p.blackhole = 0, false
}

// Delay adds d before every chunk forwarded in either direction.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Blackhole stops forwarding: connections stay open and new ones are
// accepted, but no byte gets through, as in a network partition. Pass ends it.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = true
}

// Cut closes every open connection; new connections are accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Retarget forwards new connections to target (host:port) and closes the
// open ones, as a server restarted elsewhere would: a test can keep one
// address for a member that moves, or point it at a closed port to have
// connections refused.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(in)
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	out, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		in.Close()
		return
	}
	if !p.track(target, in, out) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(out, in) }()
	go func() { defer wg.Done(); p.pipe(in, out) }()
	wg.Wait()
	p.untrack(in, out)
}

// track records a connection pair dialed to target, unless the proxy
// closed or was retargeted meanwhile.
func (p *Proxy) track(target string, cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.target != target {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// pipe copies src to dst, holding each chunk while the proxy blackholes and
// delaying it by the current latency. Either side closing ends both.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits out the latency and any blackhole. It reports false when the
// proxy closed meanwhile. Bytes read during a blackhole are held and delivered
// once traffic passes again, as TCP retransmits across a short partition;
// clients with keepalives give up on such a connection first.
func (p *Proxy) hold() bool {
	for {
		p.mu.Lock()
		latency, blackhole, closed := p.latency, p.blackhole, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if !blackhole {
			if latency > 0 {
				time.Sleep(latency)
			}
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
}
