package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"

	"github.com/sessionlog/sessionlog/eventlog"
)

// RecordKey is the member a redacted object's data gains: the list of the
// strings that were redacted (see Fields). It is reserved: a writer's own
// member of that name is replaced when something is redacted, unless it
// is an array, which the new entries are appended to.
const RecordKey = "$redacted"

// Marker returns the text a secret of kind is replaced with.
func Marker(kind string) string { return "[REDACTED:" + kind + "]" }

// Redactor finds secrets in event data and replaces them with markers. It
// is safe for concurrent use; New's result is meant to be shared.
type Redactor struct {
	patterns []pattern
	scratch  sync.Pool // *[]byte: decoded strings
	// slow turns the fast path off (mayMatch in scanRuns, mayHold): what
	// FuzzFastPath compares them with.
	slow bool
}

type pattern struct {
	kind string
	re   *regexp.Regexp
}

// Option configures a Redactor.
type Option func(*Redactor)

// WithPattern adds a detector: every match of re in a decoded string is
// redacted as kind (a name for the marker: letters, digits and dashes).
// Extra patterns run on every string, after the built-in detectors: they
// cost a regular-expression search each.
func WithPattern(kind string, re *regexp.Regexp) Option {
	return func(r *Redactor) { r.patterns = append(r.patterns, pattern{kind, re}) }
}

// New returns a Redactor with the built-in detectors (Detectors) and the
// options' patterns.
func New(opts ...Option) *Redactor {
	r := &Redactor{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ValidKind reports whether kind can name a pattern: 1 to 64 bytes of
// a-z, 0-9 and '-'.
func ValidKind(kind string) error {
	if len(kind) == 0 || len(kind) > 64 {
		return fmt.Errorf("redact: kind %q must be 1 to 64 characters", kind)
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("redact: kind %q has a character outside a-z 0-9 -", kind)
		}
	}
	return nil
}

// Data returns data with every secret in its strings (keys and values)
// replaced by its marker, and whether anything was replaced. Only the raw
// bytes of each secret change (escapes around it are kept as written);
// an object also gains or extends its RecordKey member. Data in which
// nothing is found — the common case — is returned as is, without an
// allocation. Data that is not valid JSON is returned as is: validation
// refuses it after.
func (r *Redactor) Data(data []byte) ([]byte, bool) {
	out, _, ok := r.Redact(data)
	return out, ok
}

// Redact is Data that also returns the kinds of the secrets replaced,
// sorted (nil when nothing was).
func (r *Redactor) Redact(data []byte) (out []byte, kinds []string, changed bool) {
	if !r.any(data) {
		return data, nil, false
	}
	if !json.Valid(data) {
		return data, nil, false
	}
	w := walker{r: r, data: data}
	out, ok := w.run()
	if !ok {
		return data, nil, false
	}
	return out, w.kinds, true
}

// DetectorsVersion names the built-in detectors' table (Detectors): a
// record of a redaction (a rewrite's) says which table it used, so that
// whoever checks it redacts with the same one. A change of any detector
// changes it.
const DetectorsVersion = "sessionlog-redact/1"

// Patterns returns the extra patterns of the Redactor, in the order they
// were given: kind and regular expression.
func (r *Redactor) Patterns() [][2]string {
	out := make([][2]string, len(r.patterns))
	for i, p := range r.patterns {
		out[i] = [2]string{p.kind, p.re.String()}
	}
	return out
}

// Events redacts the data of each event in place (Data) and returns how
// many changed. A changed event's Data is a new slice; the others are
// left alone. It is what a writer calls on a batch before it validates
// and digests it.
func (r *Redactor) Events(events []eventlog.Event) int {
	n := 0
	for i := range events {
		if d, ok := r.Data(events[i].Data); ok {
			events[i].Data = d
			n++
		}
	}
	return n
}

// any reports whether a detector matches a string of data. It finds the
// strings by their quotes, without parsing: outside strings, JSON holds no
// quote.
func (r *Redactor) any(data []byte) bool {
	if !r.mayHold(data) {
		return false
	}
	var spans [1]span
	for i := 0; i < len(data); {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			return false
		}
		start := i + k + 1
		end := stringEnd(data, start)
		if end < 0 {
			return false
		}
		if len(r.find(data[start:end], spans[:0], true)) > 0 {
			return true
		}
		i = end + 1
	}
	return false
}

// mayHold reports whether a detector may match a string of data, from
// one look at the whole of it: false only where any finds nothing. Data
// without escapes, '@' or ';' (no URL or connection string with a
// password) holds its strings' bytes as they are, and their runs of word
// bytes are runs of the data's (a quote is no word byte), so a secret
// needs a run of the data that mayMatch lets through. Small data of names
// and paths (a tool call) is then passed without a look at each string.
// The extra patterns can match anything.
func (r *Redactor) mayHold(data []byte) bool {
	if r.slow || len(r.patterns) > 0 {
		return true
	}
	if bytes.IndexByte(data, '\\') >= 0 || bytes.IndexByte(data, '@') >= 0 || bytes.IndexByte(data, ';') >= 0 {
		return true
	}
	t := text{data, false}
	for i := 0; ; {
		a, b := nextRun(t, i)
		if a < 0 {
			return false
		}
		if mayMatch(t, a, b) {
			return true
		}
		i = b
	}
}

// find appends the secrets in the raw body of a JSON string to out, at
// raw offsets; with first, it stops at the first, and allocates nothing.
// A body without escapes is its string. One whose escapes are all two-byte
// ones is scanned as it is (text.esc), and decoded only for the
// extra patterns. One with \u or \/ escapes is decoded first.
func (r *Redactor) find(body []byte, out []span, first bool) []span {
	if len(body) < minSecret {
		return out
	}
	n := len(out)
	done := func() bool { return first && len(out) > n }
	if bytes.IndexByte(body, '\\') < 0 {
		t := text{body, false}
		if out = scanRuns(t, out, first, r.slow); !done() {
			out = scanOthers(t, out)
		}
		if !done() && len(r.patterns) > 0 {
			out = r.scanPatterns(body, out)
		}
		return out
	}
	hard := hardEscapes(body)
	if !hard {
		t := text{body, true}
		if out = scanRuns(t, out, first, r.slow); !done() {
			out = scanOthers(t, out)
		}
		if done() || len(r.patterns) == 0 {
			return out
		}
	}
	p, _ := r.scratch.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	var raw []int
	var rawp *[]int
	if !first {
		rawp = &raw
	}
	s := decode((*p)[:0], body, rawp)
	m := len(out)
	if hard && len(s) >= minSecret {
		t := text{s, false}
		if out = scanRuns(t, out, first, r.slow); !done() {
			out = scanOthers(t, out)
		}
	}
	if !done() {
		out = r.scanPatterns(s, out)
	}
	for k := m; k < len(out) && !first; k++ {
		out[k].start, out[k].end = rawSpan(raw, out[k].start, out[k].end)
	}
	if *p = s[:0]; cap(s) <= 1<<20 {
		r.scratch.Put(p)
	}
	return out
}

// redactString returns the raw body of a JSON string with its secrets
// replaced, and their kinds added to kinds; ok is false when it holds
// none.
func (r *Redactor) redactString(body []byte, kinds []string) (out []byte, _ []string, ok bool) {
	spans := merge(body, r.find(body, nil, false))
	if len(spans) == 0 {
		return nil, kinds, false
	}
	last := 0
	for _, sp := range spans {
		out = append(out, body[last:sp.start]...)
		out = append(out, Marker(sp.kind)...)
		last = sp.end
		kinds = addKind(kinds, sp.kind)
	}
	return append(out, body[last:]...), kinds, true
}

// addKind adds kind to the sorted set kinds.
func addKind(kinds []string, kind string) []string {
	for i, k := range kinds {
		switch {
		case k == kind:
			return kinds
		case k > kind:
			kinds = append(kinds, "")
			copy(kinds[i+1:], kinds[i:])
			kinds[i] = kind
			return kinds
		}
	}
	return append(kinds, kind)
}
