package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/sessionlog/sessionlog/eventlog"
)

// ErrEscrow is returned, wrapped, when data cannot be escrowed or restored.
var ErrEscrow = errors.New("redact: escrow")

// Escrow is Redact that also keeps each redacted string's original: its
// JSON token as written, quotes and escapes included, passed to seal,
// whose result is stored in the string's record entry as "sealed". So the
// stored data holds no secret in clear, and Restore gives it back byte for
// byte to whoever can open what seal made. Data that already has a
// RecordKey member is refused: its restoration could not tell the member
// apart from the one Escrow adds; so is data that is no object but holds
// a secret, which has nowhere to keep the record. seal's result must be a string no
// detector matches (SealedText makes one).
func (r *Redactor) Escrow(data []byte, seal func(orig []byte) (string, error)) (out []byte, changed bool, err error) {
	if !r.any(data) {
		return data, false, nil
	}
	if !json.Valid(data) || !utf8.Valid(data) {
		return data, false, nil // validation refuses it after
	}
	if _, ok := eventlog.Member(data, RecordKey); ok {
		return nil, false, fmt.Errorf("%w: the data already has a %s member", ErrEscrow, RecordKey)
	}
	w := walker{r: r, data: data, seal: seal}
	out, ok := w.run()
	if w.sealErr != nil {
		return nil, false, fmt.Errorf("%w: %w", ErrEscrow, w.sealErr)
	}
	if !ok {
		return data, false, nil
	}
	if w.objEnd < 0 {
		return nil, false, fmt.Errorf("%w: data that is no object cannot carry the sealed originals of its secrets", ErrEscrow)
	}
	return out, true, nil
}

// SealedText writes ciphertext as text that no detector matches: standard
// base64 without padding, in groups of 8 characters joined by '.' (no
// detector matches a run of fewer than 10 word characters, nor any text
// without ':', ';', '@' or a space). SealedBytes reads it back.
func SealedText(ciphertext []byte) string {
	enc := base64Raw(ciphertext)
	var b bytes.Buffer
	for i := 0; i < len(enc); i += 8 {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(enc[i:min(i+8, len(enc))])
	}
	return b.String()
}

// SealedBytes reads what SealedText wrote.
func SealedBytes(text string) ([]byte, error) {
	b, err := unbase64Raw(string(bytes.ReplaceAll([]byte(text), []byte("."), nil)))
	if err != nil {
		return nil, fmt.Errorf("%w: a sealed original is not sealed text: %w", ErrEscrow, err)
	}
	return b, nil
}

// Restore undoes Escrow: it puts every sealed original of data's record
// back where its entry's path says, and removes the record. open turns an
// entry's "sealed" text into the original token. An entry without
// "sealed" (a plain redaction) cannot be undone: Restore returns an error
// wrapping ErrEscrow, as it does when an original does not fit. Data
// without a record is returned as is.
func Restore(data []byte, open func(sealed string) ([]byte, error)) ([]byte, error) {
	fields, err := Fields(data)
	if err != nil || fields == nil {
		return data, err
	}
	out := bytes.Clone(data)
	// Entries stand in document order, a key before what its value
	// holds: undo the last first, so each path still leads where the
	// entry was made.
	for k := len(fields) - 1; k >= 0; k-- {
		f := fields[k]
		if f.Sealed == "" {
			return nil, fmt.Errorf("%w: %s was redacted without a sealed original", ErrEscrow, f.Pointer())
		}
		orig, err := open(f.Sealed)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrEscrow, f.Pointer(), err)
		}
		var s string
		if json.Unmarshal(orig, &s) != nil {
			return nil, fmt.Errorf("%w: %s: the sealed original is not a JSON string", ErrEscrow, f.Pointer())
		}
		a, b, ok := locate(out, f.Path, f.Key)
		if !ok {
			return nil, fmt.Errorf("%w: %s: no string there", ErrEscrow, f.Pointer())
		}
		out = append(out[:a:a], append(orig, out[b:]...)...)
	}
	return dropMember(out, RecordKey), nil
}

// locate returns where the string at path stands in data (its quotes
// included): the value, or with key the last step's own key.
func locate(data []byte, path []string, key bool) (int, int, bool) {
	i := skipWS(data, 0)
	for n, step := range path {
		if i >= len(data) {
			return 0, 0, false
		}
		last := n == len(path)-1
		switch data[i] {
		case '{':
			ka, kb, va, ok := member(data, i, step)
			if !ok {
				return 0, 0, false
			}
			if last && key {
				return ka, kb, true
			}
			i = va
		case '[':
			idx, err := strconv.Atoi(step)
			if err != nil {
				return 0, 0, false
			}
			va, ok := element(data, i, idx)
			if !ok {
				return 0, 0, false
			}
			i = va
		default:
			return 0, 0, false
		}
	}
	if key || i >= len(data) || data[i] != '"' {
		return 0, 0, false
	}
	end := stringEnd(data, i+1)
	if end < 0 {
		return 0, 0, false
	}
	return i, end + 1, true
}

// member finds the member named name in the object at data[i]: its key's
// bounds and where its value starts.
func member(data []byte, i int, name string) (ka, kb, va int, ok bool) {
	j := skipWS(data, i+1)
	for j < len(data) && data[j] == '"' {
		end := stringEnd(data, j+1)
		if end < 0 {
			return 0, 0, 0, false
		}
		var k string
		if json.Unmarshal(data[j:end+1], &k) != nil {
			return 0, 0, 0, false
		}
		v := skipWS(data, skipWS(data, end+1)+1)
		if k == name {
			return j, end + 1, v, true
		}
		e := skipValue(data, v)
		if e < 0 {
			return 0, 0, 0, false
		}
		j = skipWS(data, e)
		if j >= len(data) || data[j] != ',' {
			return 0, 0, 0, false
		}
		j = skipWS(data, j+1)
	}
	return 0, 0, 0, false
}

// element finds where the idx-th element of the array at data[i] starts.
func element(data []byte, i, idx int) (int, bool) {
	j := skipWS(data, i+1)
	for n := 0; j < len(data) && data[j] != ']'; n++ {
		if n == idx {
			return j, true
		}
		e := skipValue(data, j)
		if e < 0 {
			return 0, false
		}
		j = skipWS(data, e)
		if j < len(data) && data[j] == ',' {
			j = skipWS(data, j+1)
		}
	}
	return 0, false
}

// dropMember removes the top-level member name of the object data, with
// the comma that joined it to its neighbours.
func dropMember(data []byte, name string) []byte {
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return data
	}
	ka, _, va, ok := member(data, i, name)
	if !ok {
		return data
	}
	ve := skipValue(data, va)
	// Before it: whitespace back to a ',' (then drop that comma) or the '{'.
	a := ka
	for a > 0 && isWS(data[a-1]) {
		a--
	}
	b := skipWS(data, ve)
	switch {
	case data[a-1] == ',':
		a--
	case b < len(data) && data[b] == ',':
		b = skipWS(data, b+1)
	}
	return append(data[:a:a], data[b:]...)
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipValue returns the index past the valid JSON value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end := stringEnd(b, i+1)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end := stringEnd(b, i+1)
				if end < 0 {
					return -1
				}
				i = end
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",]} \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}

func base64Raw(b []byte) string { return base64.RawStdEncoding.EncodeToString(b) }

func unbase64Raw(s string) ([]byte, error) { return base64.RawStdEncoding.DecodeString(s) }

// Span is a secret found in the raw body of a JSON string (between its
// quotes, escapes as written): its byte range there and its kind.
type Span struct {
	Start, End int
	Kind       string
}

// Find returns the secrets in the raw body of a JSON string, in order,
// overlapping ones merged. The body may be several strings' bodies joined
// (a text a stream sent in pieces): each piece is whole JSON string
// content, so the join is too.
func (r *Redactor) Find(body []byte) []Span {
	spans := merge(body, r.find(body, nil, false))
	out := make([]Span, len(spans))
	for i, s := range spans {
		out[i] = Span{s.start, s.end, s.kind}
	}
	return out
}

// At names a string of data to escrow whole (EscrowAt): its path (as in
// Field), the kinds of the secrets it holds a part of, and the raw body
// (escapes as written, no quotes) that stands in its place; nil stands for
// the marker of its first kind.
type At struct {
	Path  []string
	Kinds []string
	Body  []byte
}

// EscrowAt replaces each string that at names with the marker of its
// first kind, seals its original token into a record entry as Escrow
// does, and appends the entries to data's record (made when data has
// none). It is for a secret that no string holds whole — one a stream
// sent in pieces — found by Find in the strings joined. Restore undoes it
// with Escrow's entries, last first.
func EscrowAt(data []byte, at []At, seal func(orig []byte) (string, error)) ([]byte, error) {
	out := bytes.Clone(data)
	var entries []byte
	for _, a := range at {
		if len(a.Kinds) == 0 {
			return nil, fmt.Errorf("%w: no kind for %v", ErrEscrow, a.Path)
		}
		i, j, ok := locate(out, a.Path, false)
		if !ok {
			return nil, fmt.Errorf("%w: no string at %v", ErrEscrow, a.Path)
		}
		sealed, err := seal(out[i:j])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEscrow, err)
		}
		repl := []byte(strconv.Quote(Marker(a.Kinds[0])))
		if a.Body != nil {
			repl = append(append([]byte{'"'}, a.Body...), '"')
		}
		out = append(out[:i:i], append(repl, out[j:]...)...)
		if len(entries) > 0 {
			entries = append(entries, ',')
		}
		f := Field{Path: a.Path, Kinds: slices.Sorted(slices.Values(a.Kinds)), Sealed: sealed}
		entries = append(entries, entryJSON(f)...)
	}
	if len(entries) == 0 {
		return data, nil
	}
	top := skipWS(out, 0)
	if top >= len(out) || out[top] != '{' {
		return nil, fmt.Errorf("%w: data that is no object cannot carry a record", ErrEscrow)
	}
	if _, _, va, ok := member(out, top, RecordKey); ok && out[va] == '[' {
		end := skipValue(out, va) - 1 // its ']'
		if len(bytes.TrimSpace(out[va+1:end])) > 0 {
			entries = append([]byte{','}, entries...)
		}
		return append(out[:end:end], append(entries, out[end:]...)...), nil
	} else if ok {
		return nil, fmt.Errorf("%w: the %s member is not an array", ErrEscrow, RecordKey)
	}
	end := skipValue(out, top) - 1 // its '}'
	ins := []byte(`"` + RecordKey + `":[`)
	if len(bytes.TrimSpace(out[top+1:end])) > 0 {
		ins = append([]byte{','}, ins...)
	}
	ins = append(append(ins, entries...), ']')
	return append(out[:end:end], append(ins, out[end:]...)...), nil
}

// entryJSON writes a record entry; path steps that are decimal integers
// are written as indices.
func entryJSON(f Field) []byte {
	b := []byte(`{"path":[`)
	for k, p := range f.Path {
		if k > 0 {
			b = append(b, ',')
		}
		if n, err := strconv.Atoi(p); err == nil && strconv.Itoa(n) == p {
			b = strconv.AppendInt(b, int64(n), 10)
		} else {
			q, _ := json.Marshal(p)
			b = append(b, q...)
		}
	}
	b = append(b, `],"kinds":[`...)
	for k, kind := range f.Kinds {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, kind)
	}
	b = append(b, `],"sealed":`...)
	b = strconv.AppendQuote(b, f.Sealed)
	return append(b, '}')
}
