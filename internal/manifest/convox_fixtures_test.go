package manifest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// verdictLine is how each manifest under testdata/convox records what
// Convox's own parser and Validate make of it, by the rule in the Convox
// source file its header names: "# convox: accepts", "# convox: accepts,
// ignores KEY" for a key Convox drops without a word, or "# convox: rejects
// PART", where PART is what Convox refuses.
var verdictLine = regexp.MustCompile(`(?m)^# convox: (accepts(?:, ignores (.+))?|rejects (.+))$`)

// TestConvoxFixtures runs Check over small manifests of a shop app, each
// written to exercise one rule or accepted form of Convox's manifest code,
// which its header names. A manifest Convox rejects never passes as
// fine: Check reports a problem Convox rejects it for, or LeftToConvox
// names the part Convox refuses as Convox's to check. A manifest Convox
// accepts gets no problem but baton's, and the ones about keys Convox
// drops.
func TestConvoxFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/convox/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/convox/*.yml: %v", err)
	}
	rejected, passed := 0, 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m := verdictLine.FindStringSubmatch(string(src))
			if m == nil {
				t.Fatal("no `# convox: accepts|rejects PART` line")
			}
			d := mustParse(t, string(src))
			problems, left := Check(d), LeftToConvox(d)
			var rejects []string
			for _, p := range problems {
				if p.Rule == Rejected {
					rejects = append(rejects, p.Message)
				}
				accepts := strings.HasPrefix(m[1], "accepts")
				if accepts && p.Rule == Rejected {
					t.Errorf("Convox accepts this manifest, but Check says: %s", p.Message)
				}
				if accepts && p.Rule == Ignored && (m[2] == "" || !strings.Contains(p.Message, m[2])) {
					t.Errorf("Convox reads all of this manifest, but Check says: %s", p.Message)
				}
			}
			if strings.HasPrefix(m[1], "accepts") {
				return
			}
			rejected++
			part := m[3]
			for _, u := range left {
				if strings.Contains(u.Part, part) {
					return
				}
			}
			if len(rejects) == 0 {
				passed++
				t.Errorf("Convox rejects this manifest (%s), but Check reports no problem Convox rejects it for, and LeftToConvox %v does not name %s", part, left, part)
			}
		})
	}
	t.Logf("%d of %d manifests Convox rejects pass with no problem and their rule unnamed", passed, rejected)
}
