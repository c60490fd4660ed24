package redact

import (
	"bytes"
	"strconv"
)

// walker rewrites valid JSON data whose strings hold secrets: it walks
// the value with the path to each string, copies the bytes between the
// strings that change as they are, and adds the record of what changed to
// a top-level object.
type walker struct {
	r      *Redactor
	data   []byte
	out    []byte
	copied int      // data[:copied] is in out
	path   []seg    // to the current value
	fields []byte   // the record's entries, comma-separated
	kinds  []string // the kinds replaced, sorted
	// The top-level object in the output: where it opens and closes,
	// and the value of a RecordKey member it already has.
	objStart, objEnd int
	recStart, recEnd int
	bad              bool
	// seal, when set, keeps each redacted string's original (its JSON
	// token, quotes included) sealed in its record entry (Escrow).
	seal    func(orig []byte) (string, error)
	sealErr error
}

// seg is a step of a path: an object key (its raw JSON string, as written
// in out) or an array index.
type seg struct {
	key []byte
	idx int
}

func (w *walker) run() ([]byte, bool) {
	w.objEnd, w.recStart = -1, -1
	end := w.value(skipWS(w.data, 0), 0)
	if w.bad || end < 0 || len(w.fields) == 0 {
		return nil, false
	}
	w.out = append(w.out, w.data[w.copied:]...)
	if w.objEnd >= 0 {
		w.out = w.addRecord(w.out)
	}
	return w.out, true
}

// outAt is where data[d] stands in the output, for a d at or past every
// change made so far.
func (w *walker) outAt(d int) int { return len(w.out) + d - w.copied }

// addRecord writes the record into out: into the existing RecordKey
// array, in place of an existing RecordKey member of another type, or as
// a new last member of the top-level object.
func (w *walker) addRecord(out []byte) []byte {
	var ins []byte
	at, cut := w.objEnd, w.objEnd // out[at:cut] is replaced by ins
	switch {
	case w.recStart >= 0 && out[w.recStart] == '[':
		at, cut = w.recEnd-1, w.recEnd-1 // before its ']'
		if len(bytes.TrimSpace(out[w.recStart+1:at])) > 0 {
			ins = append(ins, ',')
		}
		ins = append(ins, w.fields...)
	case w.recStart >= 0:
		at, cut = w.recStart, w.recEnd
		ins = append(append(append(ins, '['), w.fields...), ']')
	default:
		if len(bytes.TrimSpace(out[w.objStart:at])) > 1 {
			ins = append(ins, ',')
		}
		ins = append(append(append(ins, `"`+RecordKey+`":[`...), w.fields...), ']')
	}
	res := make([]byte, 0, len(out)+len(ins)-(cut-at))
	res = append(append(append(res, out[:at]...), ins...), out[cut:]...)
	return res
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// value walks the value at data[i] and returns the index past it.
func (w *walker) value(i, depth int) int {
	if w.bad || i >= len(w.data) {
		w.bad = true
		return -1
	}
	switch c := w.data[i]; c {
	case '"':
		end, _ := w.str(i, false)
		return end
	case '{':
		return w.object(i, depth)
	case '[':
		return w.array(i, depth)
	default:
		j := i
		for j < len(w.data) && !bytes.ContainsRune([]byte(",]} \t\r\n"), rune(w.data[j])) {
			j++
		}
		return j
	}
}

func (w *walker) object(i, depth int) int {
	if depth == 0 {
		w.objStart = w.outAt(i)
	}
	j := skipWS(w.data, i+1)
	if j < len(w.data) && w.data[j] == '}' {
		if depth == 0 {
			w.objEnd = w.outAt(j)
		}
		return j + 1
	}
	for !w.bad {
		keyStart := j
		end, key := w.str(j, true)
		if end < 0 {
			w.bad = true
			return -1
		}
		j = skipWS(w.data, end)
		j = skipWS(w.data, j+1) // past ':'
		w.path = append(w.path, seg{key: key, idx: -1})
		vstart := w.outAt(j)
		j = w.value(j, depth+1)
		w.path = w.path[:len(w.path)-1]
		if j < 0 {
			return -1
		}
		if depth == 0 && string(w.data[keyStart:end]) == `"`+RecordKey+`"` {
			w.recStart, w.recEnd = vstart, w.outAt(j)
		}
		j = skipWS(w.data, j)
		if j >= len(w.data) {
			w.bad = true
			return -1
		}
		if w.data[j] == '}' {
			if depth == 0 {
				w.objEnd = w.outAt(j)
			}
			return j + 1
		}
		j = skipWS(w.data, j+1) // past ','
	}
	return -1
}

func (w *walker) array(i, depth int) int {
	j := skipWS(w.data, i+1)
	if j < len(w.data) && w.data[j] == ']' {
		return j + 1
	}
	for n := 0; !w.bad; n++ {
		w.path = append(w.path, seg{idx: n})
		j = w.value(j, depth+1)
		w.path = w.path[:len(w.path)-1]
		if j < 0 {
			return -1
		}
		j = skipWS(w.data, j)
		if j >= len(w.data) {
			w.bad = true
			return -1
		}
		if w.data[j] == ']' {
			return j + 1
		}
		j = skipWS(w.data, j+1)
	}
	return -1
}

// str walks the string at data[i] (its opening quote), redacting it when
// it holds secrets. It returns the index past it and the string as it
// stands in the output (quotes included), for a path.
func (w *walker) str(i int, isKey bool) (int, []byte) {
	end := stringEnd(w.data, i+1)
	if end < 0 {
		w.bad = true
		return -1, nil
	}
	body := w.data[i+1 : end]
	if len(body) < minSecret {
		return end + 1, w.data[i : end+1]
	}
	repl, kinds, ok := w.r.redactString(body, nil)
	if !ok {
		return end + 1, w.data[i : end+1]
	}
	w.out = append(w.out, w.data[w.copied:i+1]...)
	at := len(w.out) - 1
	w.out = append(w.out, repl...)
	w.out = append(w.out, '"')
	w.copied = end
	w.copied++
	quoted := w.out[at:len(w.out):len(w.out)]
	w.addField(isKey, quoted, kinds, w.data[i:end+1])
	for _, k := range kinds {
		w.kinds = addKind(w.kinds, k)
	}
	return end + 1, quoted
}

// addField appends the record entry of a redacted string:
// {"path":[…],"key":true?,"kinds":[…]}. A redacted key's own path ends
// in its new name.
func (w *walker) addField(isKey bool, quoted []byte, kinds []string, orig []byte) {
	if len(w.fields) > 0 {
		w.fields = append(w.fields, ',')
	}
	w.fields = append(w.fields, `{"path":[`...)
	path := w.path
	if isKey {
		path = append(path[:len(path):len(path)], seg{key: quoted, idx: -1})
	}
	for k, s := range path {
		if k > 0 {
			w.fields = append(w.fields, ',')
		}
		if s.key != nil {
			w.fields = append(w.fields, s.key...)
		} else {
			w.fields = strconv.AppendInt(w.fields, int64(s.idx), 10)
		}
	}
	w.fields = append(w.fields, ']')
	if isKey {
		w.fields = append(w.fields, `,"key":true`...)
	}
	w.fields = append(w.fields, `,"kinds":[`...)
	for k, kind := range kinds {
		if k > 0 {
			w.fields = append(w.fields, ',')
		}
		w.fields = strconv.AppendQuote(w.fields, kind)
	}
	w.fields = append(w.fields, ']')
	if w.seal != nil {
		sealed, err := w.seal(orig)
		if err != nil {
			w.sealErr, w.bad = err, true
		}
		w.fields = append(w.fields, `,"sealed":`...)
		w.fields = strconv.AppendQuote(w.fields, sealed)
	}
	w.fields = append(w.fields, '}')
}
