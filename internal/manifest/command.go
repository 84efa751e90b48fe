package manifest

import (
	"path"
	"strings"
)

// A service's command is a string: Convox splits it into the container's
// arguments, and people often wrap it in `sh -c "..."`. What Check needs to
// know is which programs it starts, so a command is read as a sequence of
// simple commands: words, with quoted strings as one word and `sh -c`
// scripts read again, separated by ; & | && || and parentheses.

// invocation is one simple command: the program's base name and its
// arguments.
type invocation struct {
	program string
	args    []string
}

// invocations returns the simple commands in a command line.
func invocations(cmd string) []invocation {
	var out []invocation
	words := shellWords(cmd)
	start := true
	cur := -1 // index in out of the command the next words belong to
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w.sep {
			start, cur = true, -1
			continue
		}
		if start {
			// Skip what only sets up the real program.
			if w.text == "exec" || w.text == "nohup" || w.text == "then" || w.text == "do" || w.text == "else" ||
				(strings.Contains(w.text, "=") && !strings.HasPrefix(w.text, "-") && !w.quoted) {
				continue
			}
			start = false
			out = append(out, invocation{program: path.Base(w.text)})
			cur = len(out) - 1
			continue
		}
		if cur < 0 {
			continue
		}
		if w.text == "-c" && isShell(out[cur].program) && i+1 < len(words) && !words[i+1].sep {
			// The script runs; what follows it is only its $0, $1...
			out = append(out, invocations(words[i+1].text)...)
			cur = -1
			i++
			continue
		}
		out[cur].args = append(out[cur].args, w.text)
	}
	return out
}

func isShell(program string) bool {
	switch program {
	case "sh", "bash", "dash", "ash", "zsh":
		return true
	}
	return false
}

type word struct {
	text   string
	sep    bool // ; & | && || ( ) or a newline
	quoted bool
}

// shellWords splits a command line roughly as a POSIX shell would: enough
// to find programs and their arguments, not to run anything.
func shellWords(s string) []word {
	var out []word
	var b strings.Builder
	inWord, quoted := false, false
	flush := func() {
		if inWord {
			out = append(out, word{text: b.String(), quoted: quoted})
		}
		b.Reset()
		inWord, quoted = false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			inWord, quoted = true, true
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				end = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '\\' && i+1 < len(s):
			inWord = true
			b.WriteByte(s[i+1])
			i++
		case c == ' ' || c == '\t':
			flush()
		case c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '\n':
			flush()
			if i+1 < len(s) && (c == '&' || c == '|') && s[i+1] == c {
				i++
			}
			out = append(out, word{text: string(c), sep: true})
		default:
			inWord = true
			b.WriteByte(c)
		}
	}
	flush()
	return out
}

// batonCommand returns the first invocation of baton in cmd with
// subcommand sub ("" for any).
func batonCommand(cmd, sub string) (invocation, bool) {
	for _, inv := range invocations(cmd) {
		if inv.program == "baton" && (sub == "" || (len(inv.args) > 0 && inv.args[0] == sub)) {
			return inv, true
		}
	}
	return invocation{}, false
}

// runsEtcd reports whether cmd starts an etcd server: `baton etcd` or etcd
// itself.
func runsEtcd(cmd string) bool {
	if _, ok := batonCommand(cmd, "etcd"); ok {
		return true
	}
	for _, inv := range invocations(cmd) {
		if inv.program == "etcd" {
			return true
		}
	}
	return false
}

// runsBaton reports whether cmd runs baton as an etcd client: any baton
// subcommand but `etcd`.
func runsBaton(cmd string) bool {
	for _, inv := range invocations(cmd) {
		if inv.program == "baton" && (len(inv.args) == 0 || inv.args[0] != "etcd") {
			return true
		}
	}
	return false
}

// runsOnce reports whether cmd runs its work through `baton run --once`.
func runsOnce(cmd string) bool {
	inv, ok := batonCommand(cmd, "run")
	if !ok {
		return false
	}
	for _, a := range inv.args[1:] {
		if a == "--" {
			break
		}
		if a == "--once" || strings.HasPrefix(a, "--once=") {
			return true
		}
	}
	return false
}

// flagValue returns the value of --name in an etcd-style argument list
// (`--name value` or `--name=value`).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// etcdArgs returns the arguments of the etcd server cmd starts.
func etcdArgs(cmd string) ([]string, bool) {
	for _, inv := range invocations(cmd) {
		if inv.program == "baton" && len(inv.args) > 0 && inv.args[0] == "etcd" {
			return inv.args[1:], true
		}
		if inv.program == "etcd" {
			return inv.args, true
		}
	}
	return nil, false
}
