package manifest

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, src string) *Document {
	t.Helper()
	d, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	return d
}

func TestManifestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		want     string
	}{
		{"unclosed flow", "services:\n  web:\n    port: [\n", 3, "did not find expected node content"},
		{"bad indentation", "services:\n  web:\n    build: .\n   port: 3000\n  worker: {}\n", 4, "did not find expected key"},
		{"a flow list over lines, then a bad indent", "services:\n  web:\n    ports: [\n      2379,\n      2380]\n    build: .\n   port: 3000\n", 7, "did not find expected key"},
		{"a tab", "services:\n\tweb: {}\n", 2, ""},
		{"two documents", "services: {}\n---\ntimers: {}\n", 2, "second YAML document"},
		{"a list", "- web\n- worker\n", 1, "the top level is a list"},
		{"a string", "hello\n", 1, `the top level is "hello"`},
		{"an unknown alias", "services: *nope\n", 0, "unknown anchor 'nope'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse: %v, want a *SyntaxError", err)
			}
			if se.Line != tt.line {
				t.Errorf("line %d, want %d (%v)", se.Line, tt.line, err)
			}
			if !strings.Contains(se.Msg, tt.want) {
				t.Errorf("message %q does not say %q", se.Msg, tt.want)
			}
		})
	}
}
