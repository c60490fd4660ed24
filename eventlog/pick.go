package eventlog

import "bytes"

// Pick returns the JSON object data with only its members whose key is
// exactly one of known, and ok; when no member is dropped it returns data
// itself (no copy). The members dropped are skipped, not validated, so
// that a reader that wants two small keys of an event whose data also
// holds a large value (a tool result's output) does not pay for scanning
// it: data read from a log was validated once already, by the reader.
// ok is false when data is not a well-formed object as far as Pick looks
// (keys and structure); the caller then decodes data as it is. A key that
// differs from a known one only by case is dropped, as ExactKeys drops it.
func Pick(data []byte, known ...string) (picked []byte, ok bool) {
	var out []byte
	kept := 0   // members kept so far
	keptTo := 0 // where the run of members kept from the start ends, before the first drop
	ok = eachMember(data, func(raw []byte, escaped bool, start, end int) {
		if keyOf(raw, escaped, known) != exact {
			if out == nil {
				out = make([]byte, 0, 64)
				out = append(out, '{')
				if kept > 0 {
					out = append(out, bytes.TrimLeft(data[:keptTo], " \t\r\n{")...)
				}
			}
			return
		}
		kept++
		if out == nil {
			keptTo = end
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, data[start:end]...)
	})
	switch {
	case !ok:
		return data, false
	case out == nil:
		return data, true
	}
	return append(out, '}'), true
}

// Member returns the raw bytes of the value of data's member whose key is
// exactly key (the last one, as encoding/json decodes a repeated key), not
// validated; found is false when there is none or data is not a
// well-formed object as far as Member looks.
func Member(data []byte, key string) (value []byte, found bool) {
	known := []string{key}
	ok := EachMember(data, func(raw []byte, escaped bool, v []byte) {
		if keyOf(raw, escaped, known) == exact {
			value, found = v, true
		}
	})
	if !ok {
		return nil, false
	}
	return value, found
}

// EachMember calls fn for every member of the JSON object data, in order,
// with the raw bytes of its key (between the quotes), whether they hold an
// escape, and the raw bytes of its value (no surrounding whitespace). As
// with Pick, values are skipped, not validated: data read from a log was
// validated once already, by the reader. It returns false when data is not
// a well-formed object as far as it looks (keys and structure), and fn may
// then have been called for some of its members. The slices fn is given
// point into data.
func EachMember(data []byte, fn func(key []byte, escaped bool, value []byte)) bool {
	return eachMember(data, func(raw []byte, escaped bool, start, end int) {
		// The key's closing quote is at start+1+len(raw); then ':' between
		// whitespace, then the value, which ends at end.
		i := skipWS(data, start+len(raw)+2)
		fn(raw, escaped, data[skipWS(data, i+1):end])
	})
}
