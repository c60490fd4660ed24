package eventlog

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// scanStringByByte is the byte-at-a-time scanner scanString's eight-byte
// skip must agree with: the definition, kept as the tests' oracle. Both
// share scanStop for what follows a stop byte; the oracle's own part is
// the byte-by-byte classification the skip replaces.
func scanStringByByte(b []byte, i int) (end int, escaped bool, err error) {
	j := i + 1
	for j < len(b) {
		switch c := b[j]; {
		case c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\':
			j++
		case c == '"':
			return j + 1, escaped, nil
		default:
			escaped = escaped || c == '\\'
			if j, err = scanStop(b, j); err != nil {
				return j, escaped, err
			}
		}
	}
	return j, escaped, errEnd
}

// requireSameScan asserts that scanString and the oracle agree on b.
func requireSameScan(t *testing.T, b []byte) {
	t.Helper()
	end, esc, err := scanString(b, 0)
	wantEnd, wantEsc, wantErr := scanStringByByte(b, 0)
	require.Equal(t, wantEnd, end, "end of %q", b)
	require.Equal(t, wantEsc, esc, "escaped of %q", b)
	if wantErr == nil {
		require.NoError(t, err, "%q", b)
	} else {
		require.EqualError(t, err, wantErr.Error(), "%q", b)
	}
	if err == nil {
		var s string
		require.NoError(t, json.Unmarshal(b[:end], &s), "encoding/json takes %q", b[:end])
	}
}

// stopBytes are the bytes that end a run of plain ASCII in a string, and
// their neighbours in value (the edges of the eight-byte test).
var stopBytes = []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xc3, 0xe2, 0xff, '\n', 'u', '0'}

// TestScanStringStopAtEveryLane puts each stop byte at every position of
// strings of every length up to three words, so that each lane of the
// eight-byte skip and the byte-at-a-time tail meet every stop.
func TestScanStringStopAtEveryLane(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range stopBytes {
				b := make([]byte, 0, n+2)
				b = append(b, '"')
				for k := range n {
					if k == pos {
						b = append(b, c)
					} else {
						b = append(b, 'a'+byte(k%26))
					}
				}
				requireSameScan(t, b)
				requireSameScan(t, append(b, '"'))
				requireSameScan(t, append(b, '"', 'x', 'y', 'z', '"', '"', '"', '"', '"'))
			}
		}
	}
}

// TestScanStringRandom compares scanString with the oracle on random
// strings drawn mostly from plain ASCII with stop bytes, escapes and UTF-8
// sequences (valid and broken) mixed in.
func TestScanStringRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 8))
	pieces := []string{`\n`, `\"`, `\\`, `\u00e9`, `\u12`, `\x`, "é", "€", "😀", "\xc3", "\xe2\x82", "\xed\xa0\x80", "\t", "\x7f"}
	for range 20000 {
		b := []byte{'"'}
		for range rng.IntN(40) {
			switch k := rng.IntN(10); {
			case k < 7:
				for range rng.IntN(20) {
					b = append(b, byte(0x20+rng.IntN(0x5f)))
				}
			case k < 9:
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			default:
				b = append(b, byte(rng.IntN(256)))
			}
		}
		if rng.IntN(4) > 0 {
			b = append(b, '"')
		}
		requireSameScan(t, b)
	}
}

// FuzzScanString checks scanString against the byte-at-a-time oracle.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"0123456789abcdef"`, `"a\"b"`, `"\u00e9 é"`, "\"\xff\"", "\"abcdefg\x01\"", `"abcdefgh\`, `"` + "abcdefgh€ijklmnop" + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		requireSameScan(t, append([]byte{'"'}, b...))
	})
}

// FuzzPlainString: PlainString, eight bytes at a time, says what a byte at
// a time check of the same rule says (moved from projection's FuzzPlain,
// whose copy of the check it replaces).
func FuzzPlainString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text, long enough", "0123456\"", "01234567\x1f", "\x7f\x20~~~~~~~~", "é........", "........\\", "\x00\x01\x02\x03\x04\x05\x06\x07\x08"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want := true
		for _, c := range body {
			want = want && c >= ' ' && c < 0x80 && c != '\\' && c != '"'
		}
		require.Equal(t, want, PlainString(body), "%q", body)
	})
}
