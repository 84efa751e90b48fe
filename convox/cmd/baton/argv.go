package main

import "fmt"

// maxArgLen is the longest string execve(2) takes as one argument or one
// environment variable: MAX_ARG_STRLEN, 32 pages of 4 KiB, counting the
// terminating NUL. A longer one fails every start with E2BIG.
const maxArgLen = 32*4096 - 1

// checkArgs refuses an argument or variable that execve(2) would, naming
// its size rather than quoting it.
func checkArgs(what string, args []string) error {
	for _, a := range args {
		if len(a) > maxArgLen {
			return fmt.Errorf("%s of %d bytes: the kernel takes at most %d bytes (128 KiB, MAX_ARG_STRLEN) in one argument or variable", what, len(a), maxArgLen)
		}
	}
	return nil
}
