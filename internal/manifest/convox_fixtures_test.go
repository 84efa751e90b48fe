package manifest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// verdictLine is how each manifest under testdata/convox records what
// Convox's own parser makes of it, by the rule of the Convox source file its
// header names: "# convox: accepts", "# convox: accepts, ignores K1, K2"
// for settings Convox drops without a word, or "# convox: rejects: MESSAGE"
// with the error Convox's Load or Validate returns. Each verdict is what
// convox/convox pkg/manifest (Load, then Validate, at commit 9e024526) gives
// the file, with every variable it requires set. Convox's module is not
// served by the Go module proxy, so this test reads the verdicts rather than
// running Convox's parser.
var verdictLine = regexp.MustCompile(`(?m)^# convox: (accepts(?:, ignores (.+))?|rejects: .+)$`)

// TestConvoxFixtures runs Check over small manifests, each written to
// exercise one rule or accepted form of Convox's manifest code. Check leaves
// what Convox refuses to Convox, which says so at deploy; what it says
// about Convox is what Convox's parser drops without a word, and that must
// be true: on each manifest, Check reports exactly the settings its verdict
// says Convox ignores, and no other.
func TestConvoxFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/convox/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/convox/*.yml: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m := verdictLine.FindStringSubmatch(string(src))
			if m == nil {
				t.Fatal("no `# convox: accepts|rejects: MESSAGE` line")
			}
			var ignores []string
			if m[2] != "" {
				ignores = strings.Split(m[2], ", ")
			}
			reported := make([]bool, len(ignores))
			for _, p := range Check(mustParse(t, string(src))) {
				if p.Rule != Ignored {
					continue
				}
				found := false
				for i, k := range ignores {
					if strings.Contains(p.Message, k) {
						reported[i], found = true, true
					}
				}
				if !found {
					t.Errorf("Check says Convox drops something its verdict does not name: line %d: %s", p.Line, p.Message)
				}
			}
			for i, k := range ignores {
				if !reported[i] {
					t.Errorf("Convox drops %s without a word, and Check does not say so", k)
				}
			}
		})
	}
}
