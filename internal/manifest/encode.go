package manifest

import (
	"bytes"
	"strings"

	"gopkg.in/yaml.v3"
)

// blankLine, as a comment line of its own, stands for a blank line while
// yaml.v3 encodes a tree: it keeps comments but not blank lines.
const blankLine = "#baton:blank-line"

// encode writes a node tree, parsed from src, as YAML that reads as src was
// written: with its indentation step, a blank line before each entry that
// had one, and merge keys as plain << (yaml.v3 would write !!merge <<). src
// has LF line breaks: yaml.v3 reads CRLF ones into comments as two.
// Comments, key order, anchors and quoting are the tree's own. A comment
// after a value gets one space before it, and lists are indented under
// their key.
func encode(root *yaml.Node, src []byte) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	seen := map[*yaml.Node]bool{}
	var mark func(n *yaml.Node)
	mark = func(n *yaml.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		if isMergeKey(n) {
			n.Tag = ""
		}
		step := 1
		if n.Kind == yaml.MappingNode {
			step = 2
		}
		for i := 0; i < len(n.Content) && n.Kind != yaml.DocumentNode; i += step {
			if i > 0 && blankAbove(lines, n.Content[i]) {
				n.Content[i].HeadComment = strings.TrimSuffix(blankLine+"\n"+n.Content[i].HeadComment, "\n")
			}
		}
		for _, c := range n.Content {
			mark(c)
		}
	}
	mark(root)
	// Comments that end the file are yaml.v3's foot comment of the
	// document, which it writes unindented: they go back as they were.
	tail := ""
	if i := len(lines) - 1; root.FootComment != "" {
		for i > 0 && (strings.TrimSpace(lines[i-1]) == "" || strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#")) {
			i--
		}
		var text []string
		for _, l := range lines[i:] {
			if t := strings.TrimSpace(l); t != "" {
				text = append(text, t)
			}
		}
		if strings.Join(text, "\n") == strings.TrimSpace(root.FootComment) {
			tail, root.FootComment = strings.Join(lines[i:], "\n"), ""
		}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(indentOf(root))
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	out := strings.Split(b.String(), "\n")
	for i, l := range out {
		if strings.TrimSpace(l) == blankLine {
			out[i] = ""
		}
	}
	return []byte(strings.Join(out, "\n") + tail), nil
}

// blankAbove reports whether the source line above node n and its head
// comment is blank. A node Init made has no line.
func blankAbove(lines []string, n *yaml.Node) bool {
	if n.Line == 0 || strings.HasPrefix(n.HeadComment, blankLine) {
		return false
	}
	above := n.Line - 2 // 0-based
	if n.HeadComment != "" {
		above -= strings.Count(n.HeadComment, "\n") + 1
	}
	return above >= 0 && above < len(lines) && strings.TrimSpace(lines[above]) == ""
}

// indentOf returns the file's indentation step: how far a block mapping's
// entries sit right of their key. 2 when nothing says.
func indentOf(root *yaml.Node) int {
	if len(root.Content) == 0 {
		return 2
	}
	top := resolve(root.Content[0])
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && v.Line > k.Line {
			if d := v.Column - k.Column; d >= 2 && d <= 8 {
				return d
			}
		}
	}
	return 2
}
