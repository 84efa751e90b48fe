package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Document is a parsed convox.yml: the bytes it came from and their node
// tree, which keeps comments, key order and anchors.
type Document struct {
	src  []byte
	root *yaml.Node // the document node; it has no content for an empty file
}

// SyntaxError is a manifest that is not YAML, or not a manifest at all.
type SyntaxError struct {
	Line int // 1-based; 0 when the YAML parser names no line
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var yamlErrorLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses a convox.yml. It fails with a *SyntaxError for YAML that does
// not parse, for more than one YAML document (Convox reads one), and for a
// top level that is not a mapping.
func Parse(src []byte) (*Document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	root := &yaml.Node{Kind: yaml.DocumentNode}
	if err := dec.Decode(root); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(src, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &SyntaxError{Line: next.Line, Msg: "a second YAML document; Convox reads convox.yml as a single document"}
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(src, err)
	}
	if len(root.Content) > 0 {
		top := root.Content[0]
		if isNull(top) {
			root.Content = nil
		} else if resolve(top).Kind != yaml.MappingNode {
			return nil, &SyntaxError{Line: top.Line, Msg: fmt.Sprintf("the top level is %s; a convox.yml is a mapping of environment, services, timers and the like", kindName(top))}
		}
	}
	return &Document{src: src, root: root}, nil
}

func syntaxError(src []byte, err error) error {
	msg := err.Error()
	if m := yamlErrorLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &SyntaxError{Line: problemLine(src, line, m[2]), Msg: m[2]}
	}
	return &SyntaxError{Msg: strings.TrimPrefix(msg, "yaml: ")}
}

// problemLine finds the line a YAML error is on. yaml.v3 names the line
// where the enclosing block starts (line 1 for a bad indent anywhere under
// services:), so this parses ever longer prefixes of the file from there:
// the first to fail with the same message ends on the line at fault.
func problemLine(src []byte, line int, msg string) int {
	lines := strings.SplitAfter(string(src), "\n")
	for n := max(line, 1); n <= len(lines); n++ {
		var node yaml.Node
		err := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &node)
		if m := yamlErrorLine.FindStringSubmatch(fmt.Sprint(err)); m != nil && m[2] == msg {
			return n
		}
	}
	return line
}

// Bytes returns the manifest's bytes: as parsed, or as Init left them.
func (d *Document) Bytes() []byte { return d.src }

// top returns the top-level mapping, or nil for an empty document.
func (d *Document) top() *yaml.Node {
	if len(d.root.Content) == 0 {
		return nil
	}
	return resolve(d.root.Content[0])
}
