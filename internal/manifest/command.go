package manifest

import (
	"path"
	"slices"
	"strings"
)

// A service's command is a string: Convox splits it into the container's
// arguments, and people often wrap it in `sh -c "..."`. What the rules need
// to know is which programs it starts, so a command is read as a sequence
// of simple commands: words, with quoted strings as one word and `sh -c`
// scripts read again, separated by ; & | && || and parentheses.

// invocation is one simple command: the program's base name and its
// arguments.
type invocation struct {
	program string
	args    []string
}

// invocations returns the simple commands in a command line. Words before
// the program that only set it up (exec, nohup, NAME=value, and the
// keywords then, do and else) are skipped.
func invocations(cmd string) []invocation {
	var out []invocation
	// cur is the command the next words belong to: -1 for a new one, -2
	// for none until the next separator.
	cur := -1
	words := shellWords(cmd)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w.sep:
			cur = -1
		case cur == -2:
		case cur < 0 && (slices.Contains([]string{"exec", "nohup", "then", "do", "else"}, w.text) ||
			!w.quoted && strings.Contains(w.text, "=") && !strings.HasPrefix(w.text, "-")):
		case cur < 0:
			out = append(out, invocation{program: path.Base(w.text)})
			cur = len(out) - 1
		case w.text == "-c" && slices.Contains([]string{"sh", "bash", "dash", "ash", "zsh"}, out[cur].program) && i+1 < len(words) && !words[i+1].sep:
			// The script runs; what follows it is only its $0, $1...
			out = append(out, invocations(words[i+1].text)...)
			cur = -2
		default:
			out[cur].args = append(out[cur].args, w.text)
		}
	}
	return out
}

type word struct {
	text        string
	sep, quoted bool // sep: ; & | && || ( ) or a line break
}

// shellWords splits a command line roughly as a POSIX shell would: enough
// to find programs and their arguments, not to run anything.
func shellWords(s string) []word {
	var out []word
	var b strings.Builder
	in, quoted := false, false
	flush := func() {
		if in {
			out = append(out, word{text: b.String(), quoted: quoted})
		}
		b.Reset()
		in, quoted = false, false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			in, quoted = true, true
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				end = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 1
		case c == '\\' && i+1 < len(s):
			in = true
			b.WriteByte(s[i+1])
			i++
		case c == ' ' || c == '\t':
			flush()
		case strings.IndexByte(";&|()\n", c) >= 0:
			flush()
			if i+1 < len(s) && (c == '&' || c == '|') && s[i+1] == c {
				i++
			}
			out = append(out, word{text: string(c), sep: true})
		default:
			in = true
			b.WriteByte(c)
		}
	}
	flush()
	return out
}

// batonCommand returns the first invocation of baton in cmd with
// subcommand sub.
func batonCommand(cmd, sub string) (invocation, bool) {
	for _, inv := range invocations(cmd) {
		if inv.program == "baton" && len(inv.args) > 0 && inv.args[0] == sub {
			return inv, true
		}
	}
	return invocation{}, false
}

// etcdArgs returns the arguments of the etcd server cmd starts: `baton
// etcd`, or etcd itself.
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

func runsEtcd(cmd string) bool {
	_, ok := etcdArgs(cmd)
	return ok
}

// runsBaton reports whether cmd runs baton as an etcd client: any baton
// subcommand but `etcd`.
func runsBaton(cmd string) bool {
	return slices.ContainsFunc(invocations(cmd), func(inv invocation) bool {
		return inv.program == "baton" && (len(inv.args) == 0 || inv.args[0] != "etcd")
	})
}

// runsOnce reports whether cmd runs its work through `baton run --once`.
func runsOnce(cmd string) bool {
	inv, _ := batonCommand(cmd, "run")
	for _, a := range inv.args {
		if a == "--" {
			break
		}
		if a == "--once" || strings.HasPrefix(a, "--once=") {
			return true
		}
	}
	return false
}

// flagValue returns the value of --name in an argument list (`--name
// value` or `--name=value`), up to a `--`.
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
