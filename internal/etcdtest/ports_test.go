package etcdtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestFreePortsAreBelowTheEphemeralRange: the ports are distinct, free, and
// from below the range the kernel hands to connections and port-0
// listeners, so nothing else is given one before the server binds it.
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

// TestFreePortsAreNotGivenTwiceAcrossProcesses: a port given to one test
// process is never given to another while the first lives, though the
// first has no server on it (a member stopped, or not yet started), as go
// test runs packages side by side. The child, this test binary run again,
// takes 500 ports and holds them until its standard input ends; this
// process then takes 2,000 from the same 22,000 or so, where a draw
// blind to the child's would share about 45 with it; and 2,000 more,
// none of them given before.
func TestFreePortsAreNotGivenTwiceAcrossProcesses(t *testing.T) {
	if os.Getenv(portsChildEnv) != "" {
		ports, err := FreePorts(500)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		for _, p := range ports {
			fmt.Println(p)
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreePortsAreNotGivenTwiceAcrossProcesses$")
	cmd.Env = append(os.Environ(), portsChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	child := map[int]bool{}
	for sc := bufio.NewScanner(out); ; {
		if !sc.Scan() {
			t.Fatalf("the child ended before it held its ports: %v", sc.Err())
		}
		if sc.Text() == "held" {
			break
		}
		p, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("the child: %s", sc.Text())
		}
		child[p] = true
	}
	if len(child) != 500 {
		t.Fatalf("the child holds %d ports, want 500", len(child))
	}
	ours, err := FreePorts(2000)
	if err != nil {
		t.Fatal(err)
	}
	var shared []int
	for _, p := range ours {
		if child[p] {
			shared = append(shared, p)
		}
	}
	if len(shared) > 0 {
		t.Errorf("%d ports given to both processes: %v", len(shared), shared)
	}
	again, err := FreePorts(2000)
	if err != nil {
		t.Fatal(err)
	}
	mine := map[int]bool{}
	for _, p := range ours {
		mine[p] = true
	}
	for _, p := range again {
		if mine[p] || child[p] {
			t.Errorf("port %d given twice", p)
		}
	}
}

// portsChildEnv makes this test binary the child that holds ports.
const portsChildEnv = "BATON_ETCDTEST_PORTS_CHILD"
