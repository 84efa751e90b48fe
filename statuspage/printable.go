package statuspage

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable is s with what a terminal would act on escaped as Go quotes it:
// control bytes ("\x1b", "\n", "\t"), other characters that print nothing
// (U+202E, which reverses the text after it) and bytes that are not UTF-8
// ("\xff"). Ordinary Unicode is kept as it is. Text output passes every
// value read from etcd through it: a run's error holds whatever the job
// printed, and etcd holds whatever a user of its API put there.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
