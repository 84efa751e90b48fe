package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal: the master, and the terminal (the slave)
// that a process started with it as stdin takes as its controlling terminal.
func openPty(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, tty
}

// TestRunCommandOwnsTheTerminal runs baton on a terminal, as a session's
// foreground job: the command reads a line typed on the terminal and changes
// the terminal's settings (stty) without stopping on SIGTTIN or SIGTTOU, goes
// on after a Ctrl-Z, and baton gets the terminal back after it. The command sets tostop, so that
// baton's own last line, written after the command, would stop baton if the
// terminal were still the command's.
func TestRunCommandOwnsTheTerminal(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	master, tty := openPty(t)
	dir := t.TempDir()
	out, reading := filepath.Join(dir, "out"), filepath.Join(dir, "reading")
	cmd := exec.Command(raceBin, "run", "--once", "tty", "--ttl", "1h", "--",
		"sh", "-c", `stty tostop && echo $$ > `+reading+` && read a && echo "got $a" > `+out)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, etcd.Env()...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// A session of its own, whose controlling terminal is tty and whose
	// foreground process group is baton's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := &syncBuffer{}
	go io.Copy(screen, master) // ends with EIO once no process has tty open
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the terminal:\n%s", screen.String())
		}
	})
	// Ctrl-Z while the command reads: it goes on, and reads the line.
	until(t, 20*time.Second, "the command to read", func() bool { return len(readLines(reading)) == 1 })
	if _, err := master.WriteString("\x1a"); err != nil {
		t.Fatal(err)
	}
	if _, err := master.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Fatalf("baton: %v", waitErr)
		}
	case <-time.After(20 * time.Second):
		b, _ := os.ReadFile(out)
		t.Fatalf("baton did not exit within 20s; the command wrote %q", b)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "got hello" {
		t.Fatalf("the command read %q from the terminal, want hello", b)
	}
	until(t, 5*time.Second, "baton's last line on the terminal", func() bool {
		return strings.Contains(screen.String(), "succeeded")
	})
}
