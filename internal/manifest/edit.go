package manifest

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// editor makes additions to a Document twice: to its node tree, which says
// what the result means, and as lines inserted into its bytes, which keeps
// everything else byte for byte. The inserted text is used only if it
// parses to what the edited tree means; otherwise the tree is encoded.
type editor struct {
	d      *Document
	lines  []string // the source, each line with its line break
	nl     string   // the source's line break
	indent int      // the source's indentation step
	// As the source has them, before any edit: keyOf maps a mapping to the
	// key whose value it is, parent a key to the mapping it is in, and next
	// a key to the key after it in that mapping.
	keyOf, parent, next map[*yaml.Node]*yaml.Node
	inserts             []insertion
	textOK              bool // false once an edit cannot be made as text
}

type insertion struct {
	line int // 0-based index of the line the text goes before
	text string
	seq  int // order among insertions at the same line
}

func newEditor(d *Document) *editor {
	e := &editor{d: d, nl: "\n", indent: 2, textOK: true,
		keyOf: map[*yaml.Node]*yaml.Node{}, parent: map[*yaml.Node]*yaml.Node{}, next: map[*yaml.Node]*yaml.Node{}}
	src := string(d.src)
	if strings.Contains(src, "\r\n") {
		e.nl = "\r\n"
	}
	e.lines = strings.SplitAfter(src, "\n")
	if len(e.lines) > 0 && e.lines[len(e.lines)-1] == "" {
		e.lines = e.lines[:len(e.lines)-1]
	}
	e.index(d.root, map[*yaml.Node]bool{})
	e.indent = detectIndent(d.top())
	return e
}

func (e *editor) index(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || n.Kind == yaml.AliasNode || seen[n] {
		return
	}
	seen[n] = true
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			e.parent[n.Content[i]] = n
			e.keyOf[n.Content[i+1]] = n.Content[i]
			if i+2 < len(n.Content) {
				e.next[n.Content[i]] = n.Content[i+2]
			}
		}
	}
	for _, c := range n.Content {
		e.index(c, seen)
	}
}

// detectIndent returns the indentation step of the file: how far a block
// mapping's entries sit right of their key. 2 when nothing says.
func detectIndent(top *yaml.Node) int {
	if top == nil || top.Kind != yaml.MappingNode {
		return 2
	}
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

// appendEntries adds key-value nodes at the end of the mapping that is the
// value of key, a block mapping or nothing (`services:`).
func (e *editor) appendEntries(key, value *yaml.Node, entries ...*yaml.Node) {
	var col int
	switch {
	case value.Kind == yaml.MappingNode && value.Style&yaml.FlowStyle == 0 && value.Line > key.Line:
		col = value.Column - 1
	case isNull(value) && value.Kind == yaml.ScalarNode && value.Value == "" && lineEndsAfterKey(e.line(key.Line)):
		col = key.Column - 1 + e.indent
		*value = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: value.Line, Column: value.Column}
	default:
		e.textOK = false
		if isNull(value) {
			*value = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		blockStyle(key, value) // encoded anew: the added entries read better in block style
	}
	sep := e.separated(value)
	value.Content = append(value.Content, entries...)
	if !e.textOK {
		return
	}
	text := e.render(col, &yaml.Node{Kind: yaml.MappingNode, Content: entries})
	at := e.backUp(e.end(key), key.Line, col)
	// One service set apart by blank lines asks for the next to be too.
	if !sep && len(value.Content) == 2+len(entries) && entries[1].Kind == yaml.MappingNode {
		for i := key.Line; i < at; i++ {
			sep = sep || isBlank(e.lines[i])
		}
	}
	if sep {
		text = e.nl + text
	}
	e.insert(at, text)
}

// blockStyle turns a flow collection into a block one, moving a comment
// after it onto its key's line, where a block collection's comment goes.
func blockStyle(key, value *yaml.Node) {
	if value.Style&yaml.FlowStyle == 0 {
		return
	}
	value.Style &^= yaml.FlowStyle
	if value.LineComment != "" && key.LineComment == "" {
		key.LineComment, value.LineComment = value.LineComment, ""
	}
}

// appendItems adds items at the end of the list that is the value of key, a
// block list or nothing (`environment:`).
func (e *editor) appendItems(key, value *yaml.Node, items ...*yaml.Node) {
	var col int
	switch {
	case value.Kind == yaml.SequenceNode && value.Style&yaml.FlowStyle == 0 && len(value.Content) > 0:
		col = value.Column - 1
	case isNull(value) && value.Kind == yaml.ScalarNode && value.Value == "" && lineEndsAfterKey(e.line(key.Line)):
		col = key.Column - 1 + e.indent
		*value = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: value.Line, Column: value.Column}
	default:
		e.textOK = false
		if isNull(value) {
			*value = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		}
		blockStyle(key, value)
	}
	value.Content = append(value.Content, items...)
	if !e.textOK {
		return
	}
	text := e.render(col, &yaml.Node{Kind: yaml.SequenceNode, Content: items})
	e.insert(e.backUp(e.end(key), key.Line, col), text)
}

// addTopKey adds key: value to the top-level mapping, before the key
// `before` (and the comments right above it), or at the end when before is
// nil.
func (e *editor) addTopKey(before *yaml.Node, key string, value *yaml.Node) {
	top := e.d.top()
	if top == nil {
		top = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		e.d.root.Kind = yaml.DocumentNode
		e.d.root.Content = []*yaml.Node{top}
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	entry := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, value}}
	if top.Style&yaml.FlowStyle != 0 {
		e.textOK = false
	}
	text := ""
	if e.textOK {
		text = e.render(0, entry)
	}
	if before == nil {
		sep := e.separated(top)
		top.Content = append(top.Content, k, value)
		if e.textOK {
			if sep && len(e.lines) > 0 {
				text = e.nl + text
			}
			e.insert(e.backUp(len(e.lines), 0, 0), text)
		}
		return
	}
	i := 0
	for i < len(top.Content) && top.Content[i] != before {
		i += 2
	}
	top.Content = append(top.Content[:i], append([]*yaml.Node{k, value}, top.Content[i:]...)...)
	if !e.textOK {
		return
	}
	at := before.Line - 1
	for at > 0 && isComment(e.lines[at-1]) {
		at--
	}
	if at == 0 {
		at = before.Line - 1 // a comment that opens the file is the file's, not the key's
	}
	if e.separated(top) {
		text += e.nl
	}
	e.insert(at, text)
}

func (e *editor) line(n int) string {
	if n-1 < len(e.lines) && n >= 1 {
		return e.lines[n-1]
	}
	return ""
}

// lineEndsAfterKey reports whether a key's line holds nothing after the
// key's colon but a comment: the value is written nowhere, so lines
// indented under it become its value.
func lineEndsAfterKey(line string) bool {
	rest := strings.TrimRight(line, "\r\n")
	i := strings.Index(rest, ":")
	if i < 0 {
		return false
	}
	rest = strings.TrimSpace(rest[i+1:])
	return rest == "" || strings.HasPrefix(rest, "#")
}

func isComment(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "#")
}

func isBlank(line string) bool { return strings.TrimSpace(line) == "" }

// end returns the index of the line after the value of key: the line of
// the next key at the same or a shallower level, or the end of the file.
func (e *editor) end(key *yaml.Node) int {
	for key != nil {
		if n := e.next[key]; n != nil {
			return n.Line - 1
		}
		key = e.keyOf[e.parent[key]]
	}
	return len(e.lines)
}

// backUp moves an insertion point up over blank lines and over comments
// left of col, which belong to what follows, but not above floor.
func (e *editor) backUp(at, floor, col int) int {
	for at > floor {
		l := strings.TrimRight(e.lines[at-1], "\r\n")
		t := strings.TrimLeft(l, " ")
		if t == "" || t == "..." || (strings.HasPrefix(t, "#") && len(l)-len(t) < col) {
			at--
			continue
		}
		break
	}
	return at
}

// separated reports whether a mapping's entries are set apart by blank
// lines, so that an added one should be too.
func (e *editor) separated(m *yaml.Node) bool {
	if m == nil || m.Kind != yaml.MappingNode || len(m.Content) < 4 {
		return false
	}
	for i := 2; i < len(m.Content); i += 2 {
		at := m.Content[i].Line - 2
		for at >= 0 && at < len(e.lines) && isComment(e.lines[at]) {
			at--
		}
		if at >= 0 && at < len(e.lines) && isBlank(e.lines[at]) {
			return true
		}
	}
	return false
}

func (e *editor) insert(line int, text string) {
	e.inserts = append(e.inserts, insertion{line: line, text: text, seq: len(e.inserts)})
}

// render encodes a mapping's entries or a list's items as YAML lines
// indented by col.
func (e *editor) render(col int, n *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(e.indent)
	if err := enc.Encode(n); err != nil {
		e.textOK = false
		return ""
	}
	pad := strings.Repeat(" ", col)
	var out strings.Builder
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		out.WriteString(pad + strings.TrimSuffix(l, "\n") + e.nl)
	}
	return out.String()
}

// result returns the edited manifest: the original bytes with the inserted
// lines if they mean what the edited tree means, else the tree encoded.
func (e *editor) result() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(e.indent)
	if err := enc.Encode(e.d.root); err != nil {
		return nil, fmt.Errorf("encode the manifest: %w", err)
	}
	encoded := b.Bytes()
	if !e.textOK {
		return encoded, nil
	}
	lines := append([]string(nil), e.lines...)
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += e.nl
	}
	sort.SliceStable(e.inserts, func(i, j int) bool {
		if e.inserts[i].line != e.inserts[j].line {
			return e.inserts[i].line > e.inserts[j].line
		}
		return e.inserts[i].seq > e.inserts[j].seq
	})
	for _, in := range e.inserts {
		lines = append(lines[:in.line], append([]string{in.text}, lines[in.line:]...)...)
	}
	patched := []byte(strings.Join(lines, ""))
	if sameMeaning(patched, encoded) {
		return patched, nil
	}
	return encoded, nil
}

// sameMeaning reports whether two YAML texts hold the same data.
func sameMeaning(a, b []byte) bool {
	var x, y any
	if yaml.Unmarshal(a, &x) != nil || yaml.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
