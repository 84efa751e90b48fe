package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestCheckRefusesWhatCouldNeverRun: crontab --check refuses a file whose
// command could never start (a NUL byte; more environment than execve(2)
// takes), a TZ line naming no zone, and a connection that can never work
// when no endpoint is set; it reads a file that starts with a byte order
// mark as one without.
func TestCheckRefusesWhatCouldNeverRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := strings.Repeat("x", 100<<10)
	var huge strings.Builder
	for i := range 70 { // 7 MiB, over the kernel's 6 MiB at most
		huge.WriteString("V" + string(rune('a'+i%26)) + strings.Repeat("b", i/26) + "=" + big + "\n")
	}
	huge.WriteString("* * * * * true\n")
	good := write("good", "* * * * * true\n")
	for _, tc := range []struct {
		name string
		file string
		env  []string
		code int
		want string
	}{
		{"NUL byte", write("nul", "* * * * * echo a\x00b\n"), nil, exitUsage, "nul:1: command has a NUL byte"},
		{"NUL in a variable", write("nulvar", "X=\"a\x00b\"\n* * * * * true\n"), nil, exitUsage, "nulvar:1: variable X has a NUL byte"},
		{"over ARG_MAX", write("huge", huge.String()), nil, exitUsage, "huge:71: the command and its environment"},
		{"bogus TZ", write("tz", "TZ=Bogus/Zone\n* * * * * true\n"), nil, exitUsage, "tz:1: TZ=Bogus/Zone: unknown time zone"},
		{"user without password", good, []string{"BATON_ETCD_USERNAME=app"}, exitUsage, "username and password must be given together"},
		{"missing CA", good, []string{"BATON_ETCD_CA=" + filepath.Join(dir, "nope.pem")}, exitFailure, "nope.pem"},
		{"missing certificate", good, []string{"BATON_ETCD_CERT=" + filepath.Join(dir, "nope.pem"), "BATON_ETCD_KEY=" + filepath.Join(dir, "nope-key.pem")}, exitFailure, "nope.pem"},
	} {
		if code, out := runBaton(t, tc.env, "crontab", "--check", tc.file); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%.2000s", tc.name, code, tc.code, tc.want, out)
		}
	}
	for _, tz := range []string{"Asia/Tokyo", "EST5EDT", "CET-1CEST,M3.5.0,M10.5.0/3", ":/etc/localtime", "UTC"} {
		if code, out := runBaton(t, nil, "crontab", "--check", write("tz-ok", "TZ="+tz+"\n* * * * * true\n")); code != 0 {
			t.Errorf("TZ=%s: exit %d:\n%s", tz, code, out)
		}
	}
	code, out := runBaton(t, nil, "crontab", "--check", write("bom", "\ufeffreport: * * * * * true\n"))
	if code != 0 || !strings.Contains(out, "bom:1\treport\t") {
		t.Errorf("a file with a byte order mark: exit %d, want the job named report:\n%q", code, out)
	}
}

// TestACommandsFailureIsLogged: a command that exits non-zero says so in
// baton's log, with the job's name and the status.
func TestACommandsFailureIsLogged(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("fails: * * * * * * exit 3\n"), 0o644)
	p := startBaton(t, etcd.Env(), "crontab", "--seconds", tab)
	p.waitOutput(`msg="baton crontab: the command failed" job=fails`, 20*time.Second)
	if !strings.Contains(p.out.String(), "status=3") {
		t.Errorf("no status=3 in:\n%s", p.out.String())
	}
}
