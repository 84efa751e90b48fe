package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// maxArgLen is the longest string execve(2) takes as one argument or one
// environment variable: MAX_ARG_STRLEN, 32 pages of 4 KiB, counting the
// terminating NUL. A longer one fails every start with E2BIG.
const maxArgLen = 32*4096 - 1

// checkArgs refuses an argument or variable that execve(2) would, naming
// its size rather than quoting it: one longer than MAX_ARG_STRLEN, or one
// with a NUL byte, which no C string can carry (Go's exec refuses it).
func checkArgs(what string, args []string) error {
	for _, a := range args {
		if len(a) > maxArgLen {
			return fmt.Errorf("%s of %d bytes: the kernel takes at most %d bytes (128 KiB, MAX_ARG_STRLEN) in one argument or variable", what, len(a), maxArgLen)
		}
		if i := strings.IndexByte(a, 0); i >= 0 {
			return fmt.Errorf("%s has a NUL byte at byte %d: no program can be given one", what, i+1)
		}
	}
	return nil
}

// execLimit is what execve(2) takes in all, arguments and environment
// together, each string with its NUL and its pointer: a quarter of the
// stack's limit, at most three quarters of 8 MiB (_STK_LIM), and never
// under 128 KiB (fs/exec.c). It is this process's: a crontab checked on
// another machine is measured against this one's.
func execLimit() int {
	const floor, ceiling = 128 << 10, 6 << 20
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err != nil || rl.Cur/4 > ceiling {
		return ceiling
	}
	return max(int(rl.Cur/4), floor)
}

// execSize is what args and env take of execLimit.
func execSize(args, env []string) int {
	n := 0
	for _, s := range append(args[:len(args):len(args)], env...) {
		n += len(s) + 1 + 8
	}
	return n
}

// checkExecSize refuses a command that, with env and this process's own
// environment (which every command inherits), is more than execve(2)
// takes.
func checkExecSize(args, env []string) error {
	size, limit := execSize(args, append(env, os.Environ()...)), execLimit()
	if size > limit {
		return fmt.Errorf("the command and its environment (baton's own included) take %d bytes: the kernel takes at most %d (ARG_MAX, a quarter of the stack limit, ulimit -s)", size, limit)
	}
	return nil
}
