package manifest

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// How Convox's parser reads a mapping (convox/convox pkg/manifest/yaml.go,
// with gopkg.in/yaml.v2): services, timers and resources are read entry by
// entry into a yaml.MapSlice, and each entry is re-encoded and read again
// into its struct (unmarshalMapSlice, remarshal). yaml.v2 drops a merge key
// (`<<: *base`) in a mapping it reads into a MapSlice, at any depth, so in
// those sections a merge key and all it holds count for nothing. A quoted
// "<<" is an ordinary key there; re-encoded, it comes out plain and is
// merged when the entry is read again (Convox's testdata/full.yml, service
// inherit, and its manifest_test.go). Merged or given, a key takes the value
// written last, a merge setting its keys where it stands; of a list of
// merged mappings, the first wins. The top level is read into a struct, where
// yaml.v2 merges a plain merge key the same way.

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// pair is one key and its value in a mapping.
type pair struct{ key, value *yaml.Node }

// isMergeKey reports whether k is a merge key as yaml.v3 (and yaml.v2)
// read it: a plain or !!merge-tagged <<.
func isMergeKey(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }

// isQuotedMerge reports whether k is a "<<" that is not a merge key where it
// is written, and becomes one once Convox re-encodes its section.
func isQuotedMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!str"
}

// fields returns the keys of a mapping inside services, timers or
// resources with the values Convox reads: plain merge keys dropped, quoted
// ones merged. Each key appears once, at its first place, with its last
// value.
func fields(m *yaml.Node) []pair { return assign(m, isQuotedMerge, isMergeKey) }

// topFields returns the top-level keys as Convox reads them: plain merge
// keys merged.
func topFields(m *yaml.Node) []pair {
	return assign(m, isMergeKey, func(*yaml.Node) bool { return false })
}

func assign(m *yaml.Node, merges, drops func(*yaml.Node) bool) []pair {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []pair
	at := map[string]int{}
	set := func(p pair) {
		if i, ok := at[p.key.Value]; ok {
			out[i] = p
			return
		}
		at[p.key.Value] = len(out)
		out = append(out, p)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch {
		case drops(k):
		case merges(k):
			sources := []*yaml.Node{v}
			if s := resolve(v); s != nil && s.Kind == yaml.SequenceNode {
				sources = s.Content
			}
			for j := len(sources) - 1; j >= 0; j-- {
				for _, p := range assign(sources[j], merges, drops) {
					set(p)
				}
			}
		default:
			set(pair{k, v})
		}
	}
	return out
}

// get returns the key and value of key in mapping m as Convox reads it, or
// nils.
func get(m *yaml.Node, key string) (k, v *yaml.Node) {
	for _, p := range fields(m) {
		if p.key.Value == key {
			return p.key, p.value
		}
	}
	return nil, nil
}

// valueOf returns the value of key in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	_, v := get(m, key)
	return v
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

// isString reports whether n is a string scalar as Convox's YAML 1.1
// parser reads it: yes, no, on and off are booleans there.
func isString(n *yaml.Node) bool {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return false
	}
	_, isBool := boolean(n)
	return !isBool
}

// number reads an integer, or a string holding one, as Convox reads ports
// and counts.
func number(n *yaml.Node) (int, bool) {
	s, ok := str(n)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
	return int(i), err == nil
}

// boolean returns a boolean scalar's value as Convox's YAML 1.1 parser
// reads it (yaml.v2's resolve table).
func boolean(n *yaml.Node) (value, ok bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.Tag != "!!bool" && n.Tag != "!!str") || (n.Tag == "!!str" && n.Style != 0) {
		return false, false // a quoted yes is a string in YAML 1.1 too
	}
	value, ok = yaml11Bools[n.Value]
	return value, ok
}

var yaml11Bools = map[string]bool{}

func init() {
	for w, b := range map[string]bool{"y": true, "yes": true, "on": true, "true": true, "n": false, "no": false, "off": false, "false": false} {
		for _, v := range []string{w, strings.ToUpper(w), strings.ToUpper(w[:1]) + w[1:]} {
			yaml11Bools[v] = b
		}
	}
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
	return strconv.Quote(n.Value)
}

// deepCopy copies a node tree as Convox reads it, aliases resolved and
// anchors and comments dropped, so the copy can be placed anywhere.
func deepCopy(n *yaml.Node) *yaml.Node {
	n = resolve(n)
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: n.Style}
	if n.Kind == yaml.MappingNode {
		for _, p := range fields(n) {
			c.Content = append(c.Content, deepCopy(p.key), deepCopy(p.value))
		}
		return c
	}
	for _, x := range n.Content {
		c.Content = append(c.Content, deepCopy(x))
	}
	return c
}
