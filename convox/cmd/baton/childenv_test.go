package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestNestedBatonInACommand runs `baton run` inside a command of `baton
// run` and of `baton crontab`, each serving --http on a fixed port and
// configured by flags alone: the command does not get BATON_HTTP (the
// nested baton would fail to bind it), and gets the endpoints and the
// prefix, so the nested baton reaches the same etcd under the same prefix.
func TestNestedBatonInACommand(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	for _, outer := range []string{"run", "crontab"} {
		t.Run(outer, func(t *testing.T) {
			dir := t.TempDir()
			envFile, status := filepath.Join(dir, "env"), filepath.Join(dir, "status")
			command := `env > ` + envFile + `; ` + batonBin + ` run --lock inner -- true; echo $? > ` + status
			conn := []string{"--endpoints", etcd.Endpoint(), "--prefix", "/nested"}
			env := []string{"BATON_HTTP=" + freeAddr(t)}
			var p *process
			if outer == "run" {
				p = startBaton(t, env, append(append([]string{"run", "--lock", "outer"}, conn...), "--", "sh", "-c", command)...)
			} else {
				tab := filepath.Join(dir, "crontab")
				os.WriteFile(tab, []byte("nested: [overlap=forbid] * * * * * * "+command+"\n"), 0o644)
				p = startBaton(t, env, append(append([]string{"crontab", "--seconds"}, conn...), tab)...)
			}
			until(t, 30*time.Second, "the nested baton to exit", func() bool { return len(readLines(status)) == 1 })
			if got := readLines(status)[0]; got != "0" {
				t.Errorf("the nested baton exited %s:\n%s", got, p.out.String())
			}
			vars := readLines(envFile)
			for _, v := range vars {
				if strings.HasPrefix(v, "BATON_HTTP=") {
					t.Errorf("the command got %s", v)
				}
			}
			for _, want := range []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_PREFIX=/nested"} {
				if !strings.Contains("\n"+strings.Join(vars, "\n")+"\n", "\n"+want+"\n") {
					t.Errorf("the command did not get %s", want)
				}
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(30 * time.Second)
		})
	}
}
