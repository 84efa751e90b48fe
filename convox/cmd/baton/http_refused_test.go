package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// seenWithin waits, d at most, until url answers want with each of
// contains in its body.
func seenWithin(t *testing.T, d time.Duration, url string, want int, contains ...string) {
	t.Helper()
	var code int
	var body string
	deadline := time.Now().Add(d)
	for {
		code, body = fetch(t, http.MethodGet, url)
		ok := code == want
		for _, s := range contains {
			ok = ok && strings.Contains(body, s)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s within %v: %d %q; want %d with %q", url, d, code, body, want, contains)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refusedCrontab is `baton crontab --http` of an every-second job, ready
// and leading, on etcd env.
func refusedCrontab(t *testing.T, env []string) (*process, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(file, []byte("tick: * * * * * * echo ran\n"), 0o644)
	p := startBaton(t, append(env, "BATON_ID=web-1", "BATON_HTTP=127.0.0.1:0"), "crontab", "--seconds", "--ttl", "2", file)
	base := p.servedAt()
	waitFetch(t, base+"/readyz", http.StatusOK, "ok")
	waitFetch(t, base+"/metrics", http.StatusOK,
		`baton_scheduler_leader{scheduler="crontab"} 1`,
		`baton_etcd_writes_refused{scheduler="crontab"} 0`,
		`baton_job_runs_total{job="tick",outcome="failure",scheduler="crontab"} 0`,
		`baton_job_ticks_not_run_total{job="tick",reason="etcd_refused",scheduler="crontab"} 0`)
	p.waitOutput(`level=INFO msg="cronx: leading" scheduler=crontab instance=web-1`, 10*time.Second)
	return p, base
}

// refusedWithin checks that etcd's refusal, in its words etcdSaid, is an
// error in the log, makes /readyz 503 and baton_etcd_writes_refused 1
// within 5 s, while /healthz, a check of the loop, stays 200.
func refusedWithin(t *testing.T, p *process, base, etcdSaid string) {
	t.Helper()
	// The first write refused may be a claim or, with a permission
	// revoked, the lease's keepalive: whichever etcd refuses first.
	p.waitOutput(`level=ERROR msg="cronx: etcd refuses writes; no tick runs until it accepts them" err="election: `, 5*time.Second)
	p.waitOutput(etcdSaid, time.Second)
	seenWithin(t, 5*time.Second, base+"/readyz", http.StatusServiceUnavailable,
		"not ready: etcd refuses the writes of scheduler crontab: "+etcdSaid)
	seenWithin(t, 5*time.Second, base+"/metrics", http.StatusOK, `baton_etcd_writes_refused{scheduler="crontab"} 1`)
	seenWithin(t, time.Second, base+"/healthz", http.StatusOK, "ok")
}

// acceptedWithin checks that etcd accepting writes again is logged at info
// level, and makes /readyz 200 and baton_etcd_writes_refused 0, within 5 s.
func acceptedWithin(t *testing.T, p *process, base string) {
	t.Helper()
	p.waitOutput(`level=INFO msg="cronx: etcd accepts writes again" scheduler=crontab instance=web-1`, 5*time.Second)
	seenWithin(t, 5*time.Second, base+"/readyz", http.StatusOK, "ok")
	seenWithin(t, 5*time.Second, base+"/metrics", http.StatusOK, `baton_etcd_writes_refused{scheduler="crontab"} 0`)
}

// TestCrontabOutOfSpaceIsSeenAtOnce: etcd out of space (its NOSPACE alarm,
// --quota-backend-bytes) while baton crontab --http runs is an error in the
// log, a 503 from /readyz and a 1 in /metrics within 5 s, each in etcd's
// words where there are words, and the replica still leads, truthfully:
// its lease lives. Once space is freed and the alarm disarmed, all three
// clear within 5 s, and the job runs again.
func TestCrontabOutOfSpaceIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.StartQuota(t, 2<<20)
	p, base := refusedCrontab(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint()})
	etcd.Fill(t)
	refusedWithin(t, p, base, "etcdserver: mvcc: database space exceeded")
	seenWithin(t, time.Second, base+"/metrics", http.StatusOK,
		`baton_scheduler_leader{scheduler="crontab"} 1`, `baton_etcd_session_up{scheduler="crontab"} 1`)
	etcd.Free(t)
	acceptedWithin(t, p, base)
	ran := strings.Count(p.out.String(), "[tick] ran")
	until(t, 10*time.Second, "the job running again", func() bool { return strings.Count(p.out.String(), "[tick] ran") > ran })
}

// TestCrontabRevokedPermissionIsSeenAtOnce: the role of baton's user loses
// its write permission under the prefix: every claim, and the lease's
// keepalives, are refused, which is an error in the log, a 503 from
// /readyz and a 1 in /metrics within 5 s, and the term and the session are
// lost, said at info level with etcd's words and in /metrics; once the
// permission is granted again, all clear within 5 s and the replica leads
// again.
func TestCrontabRevokedPermissionIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	etcd := etcdWithAuth(t)
	p, base := refusedCrontab(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_PREFIX=/baton/app",
		"BATON_ETCD_USERNAME=app", "BATON_ETCD_PASSWORD=app-secret"})
	cfg := etcdtest.ClientConfig(etcd.Endpoint())
	cfg.Username, cfg.Password = "root", "root-secret"
	root, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	grant := func(perm clientv3.PermissionType) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := root.RoleGrantPermission(ctx, "app", "/baton/app", clientv3.GetPrefixRangeEnd("/baton/app"), perm); err != nil {
			t.Fatal(err)
		}
	}
	grant(clientv3.PermissionType(clientv3.PermRead))
	refusedWithin(t, p, base, "etcdserver: permission denied")
	p.waitOutput(`level=INFO msg="cronx: no longer leading" scheduler=crontab instance=web-1`, 10*time.Second)
	p.waitOutput("the last keepalive: etcdserver: permission denied", time.Second)
	seenWithin(t, 5*time.Second, base+"/metrics", http.StatusOK,
		`baton_scheduler_leader{scheduler="crontab"} 0`, `baton_etcd_session_up{scheduler="crontab"} 0`)
	grant(clientv3.PermissionType(clientv3.PermReadWrite))
	acceptedWithin(t, p, base)
	seenWithin(t, 10*time.Second, base+"/metrics", http.StatusOK,
		`baton_scheduler_leader{scheduler="crontab"} 1`, `baton_etcd_session_up{scheduler="crontab"} 1`)
}
