package redact

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON strings as the detectors see them: decoded. The bytes of a string
// without a backslash are the string; one with escapes is decoded into a
// scratch buffer, and, when a secret is found in it, decoded again with a
// map from each decoded byte to the escape it came from, so that only the
// raw bytes of the secret are replaced and every escape around it stays
// as it was written.

// stringEnd returns the index of the quote that closes the string whose
// body starts at b[i]; < 0 when the string is not closed.
func stringEnd(b []byte, i int) int {
	from := i
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return -1
		}
		q := i + k
		n := 0
		for q-n-1 >= from && b[q-n-1] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// decode appends the decoded body of a JSON string to dst. With raw not
// nil, it also appends to *raw, for each decoded byte, the index in body
// where the byte or escape that produced it starts. A lone surrogate
// decodes to U+FFFD, as encoding/json decodes it.
func decode(dst, body []byte, raw *[]int) []byte {
	for i := 0; i < len(body); {
		k := bytes.IndexByte(body[i:], '\\')
		if k < 0 {
			k = len(body) - i
		}
		if raw != nil {
			for j := 0; j < k; j++ {
				*raw = append(*raw, i+j)
			}
		}
		dst = append(dst, body[i:i+k]...)
		i += k
		if i >= len(body) {
			break
		}
		start := i
		var r rune
		var size int
		if i+1 >= len(body) {
			break // a cut escape: invalid JSON, refused by validation
		}
		switch c := body[i+1]; c {
		case 'b':
			r, size = '\b', 2
		case 'f':
			r, size = '\f', 2
		case 'n':
			r, size = '\n', 2
		case 'r':
			r, size = '\r', 2
		case 't':
			r, size = '\t', 2
		case 'u':
			r, size = hex4(body, i+2), 6
			if utf16.IsSurrogate(r) {
				if r2 := hex4(body, i+8); i+7 < len(body) && body[i+6] == '\\' && body[i+7] == 'u' && r2 >= 0 {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r, size = d, 12
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			if r < 0 {
				r = utf8.RuneError
			}
		default:
			r, size = rune(c), 2 // \" \\ \/
		}
		n := len(dst)
		dst = utf8.AppendRune(dst, r)
		if raw != nil {
			for j := n; j < len(dst); j++ {
				*raw = append(*raw, start)
			}
		}
		i = min(start+size, len(body))
	}
	if raw != nil {
		*raw = append(*raw, len(body))
	}
	return dst
}

// hex4 reads four hex digits at b[i:], or returns -1.
func hex4(b []byte, i int) rune {
	if i+4 > len(b) {
		return -1
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// rawSpan maps the decoded span [i, j) back to the raw bytes of the body
// that produced it (raw from decode), widening it to whole escapes.
func rawSpan(raw []int, i, j int) (int, int) {
	start := raw[i]
	for j < len(raw)-1 && raw[j] == raw[j-1] {
		j++ // inside the bytes one escape produced
	}
	return start, raw[j]
}
