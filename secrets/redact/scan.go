package redact

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
)

// The detection engine. Every detector looks at a decoded string s. Most
// secrets are tokens: a run of word bytes ([A-Za-z0-9_-]) with a known
// prefix or a known context in front of it, so the engine finds the runs
// of at least minRun word bytes and hands each to the detectors by its
// first byte, its last byte and the byte before it. The runs are found
// Boyer-Moore style: a probe minRun-1 bytes ahead that lands on a byte
// that is not a word byte skips minRun bytes at once, so text with short
// words is mostly not looked at byte by byte. The few detectors that are
// not tokens are gated by a byte they need ('@' for a URL with a password,
// ';' for a connection string, "-----BEGIN" for a private key block),
// found with the runtime's vectorised search.

// minRun is the shortest run handed to the detectors: the shortest token
// prefix or name a detector starts from ("-----BEGIN", "AccountKey").
const minRun = 10

// span is a match: s[start:end] is replaced by the marker of kind.
type span struct {
	start, end int
	kind       string
}

// class is a set of bytes.
type class [256]bool

func newClass(ranges ...string) *class {
	var c class
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for b := int(r[0]); b <= int(r[2]); b++ {
				c[b] = true
			}
			continue
		}
		for i := 0; i < len(r); i++ {
			c[r[i]] = true
		}
	}
	return &c
}

var (
	word     = newClass("A-Z", "a-z", "0-9", "_-")                      // a run's bytes
	alnum    = newClass("A-Z", "a-z", "0-9")                            // most tokens' bodies
	b64      = newClass("A-Z", "a-z", "0-9", "+/")                      // base64 without padding
	b64url   = newClass("A-Z", "a-z", "0-9", "_-")                      // base64url
	hexLower = newClass("0-9", "a-f")                                   // lower-case hex
	hexAny   = newClass("0-9", "a-f", "A-F")                            // hex
	base32   = newClass("A-Z", "2-7")                                   // AWS key IDs
	upperNum = newClass("A-Z", "0-9")                                   // Slack team and bot IDs
	digits   = newClass("0-9")                                          // numeric IDs
	nameByte = newClass("A-Z", "a-z", "0-9", "_-.")                     // a variable or key name
	letters  = newClass("A-Z", "a-z")                                   // names
	spaceish = newClass(" \t\r\n")                                      // around '=' and ':'
	quotes   = newClass(`"'`)                                           // around names and values
	upwd     = newClass("!#$%&()*+,-.;=[]^_`{|}~", "0-9", "A-Z", "a-z") // a URL's userinfo: any byte but separators
)

// count returns how many bytes of s from i on are in c, looking at no more
// than max+1 of them.
func count(s []byte, i int, c *class, max int) int {
	n := 0
	for i+n < len(s) && n <= max && c[s[i+n]] {
		n++
	}
	return n
}

// body checks that s[i:] starts with between min and max bytes of c that
// are not followed by another byte of c, and returns the index past them.
func body(s []byte, i int, c *class, min, max int) (int, bool) {
	n := count(s, i, c, max)
	if n < min || n > max {
		return 0, false
	}
	return i + n, true
}

// text is a string the run detectors look at: decoded, or (esc) the raw
// body of a JSON string whose only escapes are the two-byte ones that
// stand for a byte that is no word byte (\n \t \r \b \f \" \\): its runs
// of word bytes are the decoded string's, at the raw offsets, so it needs
// no decoding.
type text struct {
	s   []byte
	esc bool
}

// word reports whether s[i] is a word byte standing for itself, not the
// second byte of an escape.
func (t text) word(i int) bool {
	if !word[t.s[i]] {
		return false
	}
	if !t.esc || i == 0 || t.s[i-1] != '\\' {
		return true
	}
	n := 0
	for j := i - 1; j >= 0 && t.s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 0
}

// skip returns the index past the bytes from i on that are in c, or are
// escapes standing for a byte in c.
func (t text) skip(i int, c *class) int {
	for i < len(t.s) {
		switch {
		case t.esc && t.s[i] == '\\' && i+1 < len(t.s) && c[unescape[t.s[i+1]]]:
			i += 2
		case c[t.s[i]] && (!t.esc || t.s[i] != '\\'):
			i++
		default:
			return i
		}
	}
	return i
}

// unescape maps the second byte of a two-byte escape to the byte it
// stands for.
var unescape = func() (t [256]byte) {
	for k, v := range map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f', '"': '"', '\\': '\\', '/': '/'} {
		t[k] = v
	}
	return t
}()

// nextRun returns the first run of at least minRun word bytes that starts
// at or after i, where i is at a run boundary (0, or just past a byte that
// is not a word byte, or at one). a < 0 when there is none.
func nextRun(t text, i int) (a, b int) {
	s := t.s
	for i+minRun <= len(s) {
		p := i + minRun - 1
		if !t.word(p) {
			i = p + 1
			continue
		}
		k := p
		for k > i && t.word(k-1) {
			k--
		}
		if k > i {
			i = k // s[k-1] is no word byte: a run from k is too short so far
			continue
		}
		b = p + 1
		for b < len(s) && t.word(b) {
			b++
		}
		return i, b
	}
	return -1, 0
}

// The fast path: most runs (identifiers, words of prose and code) are
// no secret's start, and mayMatch tells them apart from a table of the
// bytes each detector in matchRun starts from, before matchRun tries its
// rules. A run can match only when
//   - its first two bytes are those of a token prefix (tokenRules; sk- of
//     OpenAI and Anthropic keys, eyJ of a JWT, xox of a Slack token,
//     ----- of a key block), or its first byte starts a token of no
//     fixed second byte (M, N, O: a Discord bot token; 0: a Google
//     refresh token after 1//);
//   - the byte before it is '.', ':' or '/' (ya29., a Telegram token, a
//     webhook's last segment);
//   - or it ends as a secret's name does (assignment: y, n or t after an
//     e, or after a '_' or '-' the name drops).
//
// FuzzFastPath checks that the fast path finds what matchRun on every run
// finds.

// startPairs[c] is the set of second bytes that, after a first byte c,
// can start a token: bit d%64 of word d/64.
var startPairs = func() (t [256][4]uint64) {
	add := func(c0, c1 byte) { t[c0][c1/64] |= 1 << (c1 % 64) }
	for c := range tokenRules {
		for _, r := range tokenRules[c] {
			add(r.prefix[0], r.prefix[1])
		}
	}
	for _, p := range []string{"sk", "ey", "xo", "--"} {
		add(p[0], p[1])
	}
	for _, c0 := range []byte("MNO0") {
		t[c0] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	}
	return t
}()

// runBefore holds the bytes before a run that a detector starts from.
var runBefore = newClass(".:/")

// mayMatch reports whether matchRun can find a secret at the run s[a:b]
// (b-a >= minRun): false only where it cannot.
func mayMatch(t text, a, b int) bool {
	s := t.s
	if c1 := s[a+1]; startPairs[s[a]][c1/64]&(1<<(c1%64)) != 0 {
		return true
	}
	if a > 0 && runBefore[s[a-1]] {
		return true
	}
	switch s[b-1] | 0x20 {
	case 'y', 'n', 't':
		c := s[b-2]
		return c|0x20 == 'e' || c == '_' || c == '-'
	}
	return false
}

// scanRuns appends the tokens found in t to out; with first, it stops at
// the first one. slow hands every run to matchRun (FuzzFastPath).
func scanRuns(t text, out []span, first, slow bool) []span {
	s := t.s
	for i := 0; ; {
		a, b := nextRun(t, i)
		if a < 0 {
			return out
		}
		if !slow && !mayMatch(t, a, b) {
			i = b
			continue
		}
		sp, ok := matchRun(t, a, b)
		if !ok {
			i = b
			continue
		}
		out = append(out, sp)
		if first {
			return out
		}
		i = max(b, sp.end)
		for i < len(s) && t.word(i) {
			i++ // the rest of a run a match ended inside is no run start
		}
	}
}

// scanOthers appends the secrets found in t by the detectors that are
// not tokens: passwords in URLs and connection strings. They are gated by
// a byte they need ('@', ';'), which no two-byte escape stands for.
func scanOthers(t text, out []span) []span {
	if bytes.IndexByte(t.s, '@') >= 0 {
		out = urlPasswords(t.s, out)
	}
	if bytes.IndexByte(t.s, ';') >= 0 {
		out = connPasswords(t, out)
	}
	return out
}

// scanPatterns appends the matches of the extra patterns in the decoded
// string s.
func (r *Redactor) scanPatterns(s []byte, out []span) []span {
	for _, p := range r.patterns {
		for _, m := range p.re.FindAllIndex(s, -1) {
			if m[1] > m[0] {
				out = append(out, span{m[0], m[1], p.kind})
			}
		}
	}
	return out
}

// hardEscapes reports whether the raw body holds an escape that a text
// cannot stand for: \u (it may stand for a word byte) or \/ (it may be
// part of a URL). Tool output is dense with \n, \t and \", so it looks
// at eight bytes at a time for a backslash followed by u or /; an escaped
// backslash before a u (\\u) counts too, which only costs a decode.
func hardEscapes(b []byte) bool {
	var carry uint64 // the high lane of the last word was a backslash
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		bs := lanesEqual(x, '\\')
		next := lanesEqual(x, 'u') | lanesEqual(x, '/')
		if (bs<<8|carry)&next != 0 {
			return true
		}
		carry = bs >> 56
	}
	for ; i < len(b); i++ {
		if (b[i] == 'u' || b[i] == '/') && (i > 0 && b[i-1] == '\\') {
			return true
		}
	}
	return false
}

// lanesEqual returns the high bit of every byte lane of x that equals c,
// exactly (no borrow between lanes).
func lanesEqual(x uint64, c byte) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	y := x ^ (lanes1 * uint64(c))
	t := (y & low7) + low7
	return ^(t | y | low7)
}

// Byte lanes of a uint64.
const lanes1 = 0x0101010101010101

// isMarker reports whether s[i:j] is a whole marker, [REDACTED:<kind>]:
// what a detector of passwords would otherwise match again.
func isMarker(s []byte, i, j int) bool {
	m := s[i:j]
	return bytes.HasPrefix(m, markerPrefix) && m[len(m)-1] == ']' && bytes.IndexByte(m[len(markerPrefix):], ']') == len(m)-len(markerPrefix)-1
}

var markerPrefix = []byte("[REDACTED:")

// markers returns the spans of the markers in s.
func markers(s []byte) [][2]int {
	var out [][2]int
	for i := 0; ; {
		k := bytes.Index(s[i:], markerPrefix)
		if k < 0 {
			return out
		}
		k += i
		e := bytes.IndexByte(s[k:], ']')
		if e < 0 {
			return out
		}
		out = append(out, [2]int{k, k + e + 1})
		i = k + e + 1
	}
}

// merge sorts spans by start, joins those that overlap (the union is
// redacted, under the kind of the first), and drops those that touch a
// marker already in s, so that redacting twice changes nothing. It works
// in place.
func merge(s []byte, spans []span) []span {
	if len(spans) == 0 {
		return spans
	}
	slices.SortStableFunc(spans, func(a, b span) int {
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(b.end, a.end) // the longer first
	})
	var ms [][2]int
	if bytes.Contains(s, markerPrefix) {
		ms = markers(s)
	}
	out := spans[:0]
	m := 0 // markers before ms[m] end before every span still to come
	for _, sp := range spans {
		for m < len(ms) && ms[m][1] <= sp.start {
			m++
		}
		if m < len(ms) && ms[m][0] < sp.end {
			continue // it touches a marker
		}
		if k := len(out) - 1; k >= 0 && sp.start < out[k].end {
			out[k].end = max(out[k].end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// minSecret is the length of the shortest string a detector can match
// ("a://:p@" is a URL with a password).
const minSecret = 7
