package golden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mismatch says how a state differs from its golden: where first, with
// both values, and how many differences there are in all.
type Mismatch struct {
	// Path is the first differing JSON path in document order, as
	// messages[3].text or usageByModel["model-a"].inputTokens; "" is the
	// whole document.
	Path string
	// Want and Got show the golden's value and the state's at Path: JSON,
	// cut to a readable length, or "(absent)".
	Want, Got string
	// Note adds what Want and Got do not show (where two long strings
	// start to differ, keys in another order, a side that is not JSON).
	Note string
	// Count is how many differences were found (at least 1).
	Count int
}

// String is the mismatch as one line:
//
//	messages[3].text: golden "Hello", got "Hullo" (first of 2 differences)
func (m *Mismatch) String() string {
	var b strings.Builder
	b.WriteString(displayPath(m.Path))
	b.WriteString(": ")
	if m.Note != "" {
		b.WriteString(m.Note)
		if m.Want != "" || m.Got != "" {
			b.WriteString(": ")
		}
	}
	if m.Want != "" || m.Got != "" {
		fmt.Fprintf(&b, "golden %s, got %s", m.Want, m.Got)
	}
	if m.Count > 1 {
		fmt.Fprintf(&b, " (first of %d differences)", m.Count)
	}
	return b.String()
}

// Diff compares a state with its golden (both JSON, as Marshal writes
// them) and returns "" when they match, else Compare's mismatch as one
// line.
func Diff(want, got []byte) string {
	if m := Compare(want, got); m != nil {
		return m.String()
	}
	return ""
}

// Compare compares a state (got) with its golden (want): nil when they are
// the same JSON value with object keys in the same order.
func Compare(want, got []byte) *Mismatch {
	if bytes.Equal(want, got) {
		return nil
	}
	w, err := parse(want)
	if err != nil {
		return &Mismatch{Note: "the golden file is not JSON (" + err.Error() + "); regenerate it", Count: 1}
	}
	g, err := parse(got)
	if err != nil {
		return &Mismatch{Note: "the state is not JSON (" + err.Error() + ")", Count: 1}
	}
	var c comparer
	c.walk("", w, g)
	return c.first
}

// displayPath shows the document root as "(root)".
func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// node is a JSON value with the order of its object keys kept.
type node struct {
	kind  byte   // '{' object, '[' array, 's' string, 'n' number, 'b' bool, '0' null
	lit   string // string value, number literal, "true"/"false"
	keys  []string
	vals  []*node // object values, by keys' index; array elements
	index map[string]int
}

func parse(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &node{kind: '{', index: map[string]int{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := n.index[k]; !dup {
					n.index[k] = len(n.keys)
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &node{kind: '['}
			for dec.More() {
				val, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, val)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case string:
		return &node{kind: 's', lit: v}, nil
	case json.Number:
		return &node{kind: 'n', lit: v.String()}, nil
	case bool:
		return &node{kind: 'b', lit: strconv.FormatBool(v)}, nil
	case nil:
		return &node{kind: '0'}, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// comparer walks two documents and keeps the first difference.
type comparer struct {
	first *Mismatch
	count int
}

func (c *comparer) add(m Mismatch) {
	c.count++
	if c.first == nil {
		c.first = &m
	}
	c.first.Count = c.count
}

func (c *comparer) walk(path string, w, g *node) {
	if w.kind != g.kind {
		c.add(Mismatch{Path: path, Want: show(w), Got: show(g)})
		return
	}
	switch w.kind {
	case '{':
		c.walkObject(path, w, g)
	case '[':
		for i := range max(len(w.vals), len(g.vals)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(g.vals):
				c.add(Mismatch{Path: p, Want: show(w.vals[i]), Got: absent})
			case i >= len(w.vals):
				c.add(Mismatch{Path: p, Want: absent, Got: show(g.vals[i])})
			default:
				c.walk(p, w.vals[i], g.vals[i])
			}
		}
	case 's':
		if w.lit != g.lit {
			c.add(stringMismatch(path, w.lit, g.lit))
		}
	default:
		if w.lit != g.lit {
			c.add(Mismatch{Path: path, Want: show(w), Got: show(g)})
		}
	}
}

func (c *comparer) walkObject(path string, w, g *node) {
	before := c.count
	for i, k := range w.keys {
		p := joinKey(path, k)
		j, ok := g.index[k]
		if !ok {
			c.add(Mismatch{Path: p, Want: show(w.vals[i]), Got: absent})
			continue
		}
		c.walk(p, w.vals[i], g.vals[j])
	}
	for j, k := range g.keys {
		if _, ok := w.index[k]; !ok {
			c.add(Mismatch{Path: joinKey(path, k), Want: absent, Got: show(g.vals[j])})
		}
	}
	if c.count == before && !equalStrings(w.keys, g.keys) {
		c.add(Mismatch{Path: path, Note: fmt.Sprintf("keys in another order: golden %s, got %s",
			strings.Join(w.keys, ","), strings.Join(g.keys, ","))})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// absent stands for a value one side does not have.
const absent = "(absent)"

// maxShow is how many characters of a value a mismatch shows.
const maxShow = 120

// show renders a value as compact JSON, cut to maxShow characters.
func show(n *node) string {
	var b strings.Builder
	render(&b, n)
	return cut(b.String(), maxShow)
}

func render(b *strings.Builder, n *node) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			render(b, n.vals[i])
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			render(b, v)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(quote(n.lit))
	case '0':
		b.WriteString("null")
	default:
		b.WriteString(n.lit)
	}
}

// quote writes s as a JSON string without escaping HTML characters.
func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(buf.String(), "\n")
}

// cut shortens s to at most n runes, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// window is how many characters of context a long string shows before its
// first difference; it shows as many again after.
const window = 30

// stringMismatch shows two strings; long ones as a window around the first
// differing character, so a change deep in a long text is visible.
func stringMismatch(path, w, g string) Mismatch {
	wr, gr := []rune(w), []rune(g)
	if len(wr) <= maxShow && len(gr) <= maxShow {
		return Mismatch{Path: path, Want: quote(w), Got: quote(g)}
	}
	at := 0
	for at < len(wr) && at < len(gr) && wr[at] == gr[at] {
		at++
	}
	return Mismatch{
		Path: path,
		Note: fmt.Sprintf("strings differ at character %d (golden %d characters, got %d)", at, len(wr), len(gr)),
		Want: excerpt(wr, at),
		Got:  excerpt(gr, at),
	}
}

// excerpt shows r around position at, quoted, with "…" where it is cut.
func excerpt(r []rune, at int) string {
	from, to := max(0, at-window), min(len(r), at+2*window)
	s := quote(string(r[from:to]))
	if from > 0 {
		s = "…" + s
	}
	if to < len(r) {
		s += "…"
	}
	return s
}

// joinKey appends an object key to a path: .key for an identifier,
// ["key"] for anything else.
func joinKey(path, k string) string {
	if isIdent(k) {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	return path + "[" + quote(k) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
