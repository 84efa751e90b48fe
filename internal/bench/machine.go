package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/version"
)

// describeMachine says what the figures were measured on.
func describeMachine() string {
	cpu := cpuinfoField("model name")
	if cpu == "" {
		cpu = runtime.GOARCH
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# baton benchmarks, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "| machine | |\n|---|---|\n")
	fmt.Fprintf(&b, "| CPU | %s, %d cores visible to Go |\n", cpu, runtime.NumCPU())
	fmt.Fprintf(&b, "| memory | %s |\n", memTotal())
	fmt.Fprintf(&b, "| OS | %s, kernel %s |\n", osName(), strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")))
	fmt.Fprintf(&b, "| Go | %s %s/%s |\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "| etcd | %s, one member embedded in `baton etcd`, fsync on |\n", version.Version)
	fmt.Fprintf(&b, "| load average at start | %s |", loadAverage())
	return b.String()
}

// loadAverage is the 1, 5 and 15 minute load average, as uptime prints it.
func loadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func cpuinfoField(name string) string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal() string {
	for l := range strings.SplitSeq(readFile("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	return "unknown"
}

func osName() string {
	for l := range strings.SplitSeq(readFile("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}
