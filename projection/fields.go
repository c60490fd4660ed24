package projection

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/sessionlog/sessionlog/eventlog"
)

// The fast path of read: decodeFields sets a data struct's fields member
// by member, from data the log's reader validated already, so that nothing
// is validated twice and what a projection does not read (a tool result's
// output, a message's text for the agent) is skipped, a string value with a
// memchr to its closing quote. It
// handles the shapes writers produce; for anything else (an escaped key, a
// null, a value of the wrong type, a number that is not a plain integer)
// it gives up, and read decodes the whole data again with encoding/json,
// which gives that case its exact value or degraded reason. So both paths
// yield the same value for every valid data (FuzzFieldsMatchEncodingJSON
// holds them to it), and the keys are the structs' json tags for both.

// fieldKind is how decodeFields sets a field: the Go types the data
// structs use.
type fieldKind uint8

const (
	kindString    fieldKind = iota // string: optional
	kindStringPtr                  // *string: required
	kindInt                        // int64: optional
	kindIntPtr                     // *int64: required
	kindBool                       // bool: optional
	kindRaw                        // json.RawMessage: any value, pointing into the data
)

// field is one member a data struct decodes: its key (from the json tag),
// the struct field's offset and kind.
type field struct {
	key    string
	offset uintptr
	kind   fieldKind
}

// structInfo is what decoding a data struct needs, derived from its type.
type structInfo struct {
	keys   []string // the JSON keys, for eventlog.Pick
	fields []field
	// fast is false when a field has a type decodeFields does not set:
	// encoding/json then decodes every data of that struct.
	fast bool
}

// structInfos caches structInfo by type: type metadata, as encoding/json
// caches its own; never changed once stored.
var structInfos sync.Map // reflect.Type → *structInfo

var rawType = reflect.TypeFor[json.RawMessage]()

// fieldsOf returns the structInfo of the struct type t.
func fieldsOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fast: t.Kind() == reflect.Struct}
	if si.fast {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			si.keys = append(si.keys, name)
			k, ok := kindOf(f.Type)
			// An option that changes decoding (",string") is encoding/json's.
			si.fast = si.fast && ok && (opts == "" || opts == "omitempty")
			si.fields = append(si.fields, field{key: name, offset: f.Offset, kind: k})
		}
	}
	structInfos.Store(t, si)
	return si
}

// kindOf returns the kind of a field of type t; the types are exact,
// since set writes the field through a pointer of that type.
func kindOf(t reflect.Type) (fieldKind, bool) {
	switch t {
	case rawType:
		return kindRaw, true
	case reflect.TypeFor[string]():
		return kindString, true
	case reflect.TypeFor[*string]():
		return kindStringPtr, true
	case reflect.TypeFor[int64]():
		return kindInt, true
	case reflect.TypeFor[*int64]():
		return kindIntPtr, true
	case reflect.TypeFor[bool]():
		return kindBool, true
	}
	return 0, false
}

// decodeFields decodes the object data into the struct v points to,
// member by member; false means v holds a partial result, to be thrown
// away. An unknown key is skipped, as encoding/json skips it (exact keys
// only: docs/format.md §8).
//
// It writes each field through an unsafe.Pointer at the field's offset,
// of the field's exact type (kindOf): reflect.Value setters would make
// every decoded struct escape to the heap, an allocation per event.
func decodeFields[T any](data []byte, v *T) bool {
	si := fieldsOf(reflect.TypeFor[T]())
	base := unsafe.Pointer(v)
	if !si.fast {
		return false
	}
	ok := true
	wellFormed := eventlog.EachMember(data, func(key []byte, escaped bool, value []byte) {
		if !ok {
			return
		}
		if escaped {
			ok = false
			return
		}
		for i := range si.fields {
			if f := &si.fields[i]; f.key == string(key) {
				ok = f.set(unsafe.Add(base, f.offset), value)
				return
			}
		}
	})
	return ok && wellFormed
}

// set decodes the raw value v into the field at p, reporting whether v has
// the plain form of the field's type. A pointer field is set to a new
// value; null is never plain (encoding/json sets a pointer to nil but
// leaves a plain value as it was), but for a RawMessage, which takes any
// value as it is. A string is a copy; a RawMessage points into the data.
func (f *field) set(p unsafe.Pointer, v []byte) bool {
	switch f.kind {
	case kindString:
		s, ok := unquote(v)
		*(*string)(p) = s
		return ok
	case kindStringPtr:
		s, ok := unquote(v)
		*(**string)(p) = &s
		return ok
	case kindInt:
		n, ok := parseInt(v)
		*(*int64)(p) = n
		return ok
	case kindIntPtr:
		n, ok := parseInt(v)
		*(**int64)(p) = &n
		return ok
	case kindBool:
		switch string(v) {
		case "true", "false":
			*(*bool)(p) = v[0] == 't'
		default:
			return false
		}
	case kindRaw:
		// Not copied: a projection keeps it with keepRaw, and the agent
		// keeps no tool call's args.
		*(*json.RawMessage)(p) = v
	}
	return true
}

// keepRaw returns raw, a value inside an event's data, as a projection
// keeps it: a copy, since Apply keeps no byte of the data (Borrower). Nil
// stays nil.
func keepRaw(raw []byte) []byte { return bytes.Clone(raw) }

// parseInt reads a JSON number that is a plain integer of at most 18
// digits (so it cannot overflow), as strconv.ParseInt would.
func parseInt(v []byte) (int64, bool) {
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(d) < len(v) {
		n = -n
	}
	return n, true
}

// unquote returns the string the JSON string v holds, as encoding/json
// decodes it, a copy; ok is false when v is not a string.
func unquote(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	if body := v[1 : len(v)-1]; eventlog.PlainString(body) {
		return string(body), true
	}
	// Unescaping only shortens the string (but for what encoding/json
	// decodes): one allocation, which the string then owns.
	b, ok := appendUnescaped(make([]byte, 0, len(v)-2), v)
	return unsafe.String(unsafe.SliceData(b), len(b)), ok
}

// appendUnquoted appends the string the JSON string v holds to dst, as
// encoding/json decodes it. It decodes the short escapes of valid UTF-8
// itself, from one backslash to the next, and leaves a \u escape or
// invalid UTF-8 to encoding/json. It trusts v to be valid JSON (no
// control byte or bare quote inside), as the log's reader checked. On
// failure (v is not a string) it returns dst unchanged and false.
func appendUnquoted(dst, v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return dst, false
	}
	if body := v[1 : len(v)-1]; eventlog.PlainString(body) {
		return append(dst, body...), true
	}
	return appendUnescaped(dst, v)
}

// appendUnescaped is appendUnquoted for a string v that is known to be
// quoted and not plain.
func appendUnescaped(dst, v []byte) ([]byte, bool) {
	body := v[1 : len(v)-1]
	if !utf8.Valid(body) {
		return appendByEncodingJSON(dst, v)
	}
	n0 := len(dst)
	for {
		i := bytes.IndexByte(body, '\\')
		if i < 0 {
			return append(dst, body...), true
		}
		if i+1 == len(body) {
			return appendByEncodingJSON(dst[:n0], v)
		}
		r := body[i+1]
		switch r {
		case '"', '\\', '/':
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		default:
			return appendByEncodingJSON(dst[:n0], v)
		}
		dst = append(append(dst, body[:i]...), r)
		body = body[i+2:]
	}
}

// appendByEncodingJSON appends the string v holds as decoded by
// encoding/json: a leaf value, so only its bytes are scanned again.
func appendByEncodingJSON(dst, v []byte) ([]byte, bool) {
	var s string
	if json.Unmarshal(v, &s) != nil {
		return dst, false
	}
	return append(dst, s...), true
}
