package workload

import "strconv"

// object builds a compact JSON object, keys in the order they are added.
type object struct{ b []byte }

func obj() *object { return &object{b: []byte{'{'}} }

func (o *object) key(k string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = appendString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *object) str(k, v string) *object {
	o.key(k)
	o.b = appendString(o.b, v)
	return o
}

func (o *object) num(k string, v int) *object {
	o.key(k)
	o.b = strconv.AppendInt(o.b, int64(v), 10)
	return o
}

func (o *object) raw(k string, v []byte) *object {
	o.key(k)
	o.b = append(o.b, v...)
	return o
}

// done closes the object and returns its bytes; the object is not used
// after.
func (o *object) done() []byte { return append(o.b, '}') }

// appendString appends s as a JSON string. HTML characters are left as they
// are (as json.Encoder.SetEscapeHTML(false) does); control characters are
// escaped.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
