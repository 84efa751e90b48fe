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
// Prefixes that fail otherwise cut a flow list or a quoted string in two,
// and are passed over.
func problemLine(src []byte, line int, msg string) int {
	lines := strings.SplitAfter(string(src), "\n")
	for n := max(line, 1); n <= len(lines); n++ {
		var node yaml.Node
		err := yaml.Unmarshal([]byte(strings.Join(lines[:n], "")), &node)
		if err == nil {
			continue
		}
		if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
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

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// pair is one key and its value in a mapping.
type pair struct{ key, value *yaml.Node }

// pairs returns a mapping's entries as Convox's YAML parser sees them: merge
// keys (`<<: *base`) expanded, a key written in the mapping winning over a
// merged one, and an earlier merged mapping over a later one. Duplicate keys
// are all returned, in order, so that a caller taking the last one sees
// what Convox keeps.
func pairs(m *yaml.Node) []pair {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var own, merged []pair
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if isMergeKey(k) {
			src := resolve(v)
			var sources []*yaml.Node
			if src != nil && src.Kind == yaml.SequenceNode {
				sources = src.Content
			} else {
				sources = []*yaml.Node{v}
			}
			for _, s := range sources {
				merged = append(merged, pairs(s)...)
			}
			continue
		}
		own = append(own, pair{k, v})
	}
	seen := map[string]bool{}
	for _, p := range own {
		seen[p.key.Value] = true
	}
	out := own
	for _, p := range merged {
		if !seen[p.key.Value] {
			seen[p.key.Value] = true
			out = append(out, p)
		}
	}
	return out
}

// isMergeKey reports whether k merges a mapping in. Convox's parser merges
// on a quoted "<<" too: convox/convox pkg/manifest/testdata/full.yml gives
// service inherit `"<<": *proxy`, and its manifest_test.go expects proxy's
// image, port and health in it.
func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && (k.Tag == "!!merge" || k.Value == "<<")
}

// get returns the last value of key in mapping m, and its key node.
func get(m *yaml.Node, key string) (k, v *yaml.Node) {
	for _, p := range pairs(m) {
		if p.key.Value == key {
			k, v = p.key, p.value
		}
	}
	return k, v
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// str returns a scalar's text; ok is false for anything but a string,
// number or boolean scalar.
func str(n *yaml.Node) (s string, ok bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", false
	}
	return n.Value, true
}

// isString reports whether n is a string scalar, as Convox's YAML 1.1
// parser reads it.
func isString(n *yaml.Node) bool {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return false
	}
	_, isBool := yaml11Bool(n)
	return !isBool
}

// integer returns an integer scalar's value.
func integer(n *yaml.Node) (int, bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil {
		return 0, false
	}
	return int(i), true
}

// boolean returns a boolean scalar's value as Convox reads it: its parser
// is YAML 1.1's, where yes, no, on and off are booleans too.
func boolean(n *yaml.Node) (value, ok bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode {
		return false, false
	}
	if n.Tag == "!!bool" {
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		return b, err == nil
	}
	return yaml11Bool(n)
}

func yaml11Bool(n *yaml.Node) (value, ok bool) {
	if n.Style != 0 || (n.Tag != "!!str" && n.Tag != "!!bool") {
		return false, false // quoted: a string in YAML 1.1 too
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE":
		return true, true
	case "n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE":
		return false, true
	}
	return false, false
}

func kindName(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil || n.Tag == "!!null":
		return "empty"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Tag == "!!int" || n.Tag == "!!float":
		return "the number " + n.Value
	}
	if _, ok := boolean(n); ok {
		return "the boolean " + n.Value
	}
	return strconv.Quote(n.Value)
}

// deepCopy copies a node tree, aliases resolved and anchors dropped, so the
// copy can be placed anywhere in a document.
func deepCopy(n *yaml.Node) *yaml.Node {
	n = resolve(n)
	c := *n
	c.Anchor, c.HeadComment, c.LineComment, c.FootComment = "", "", "", ""
	c.Line, c.Column = 0, 0
	c.Content = nil
	if n.Kind == yaml.MappingNode {
		for _, p := range pairs(n) {
			c.Content = append(c.Content, deepCopy(p.key), deepCopy(p.value))
		}
		return &c
	}
	for _, x := range n.Content {
		c.Content = append(c.Content, deepCopy(x))
	}
	return &c
}
