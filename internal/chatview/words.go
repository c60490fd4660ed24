package chatview

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plural says n things in words: "1 event", "2 events", "no events".
// plural is the plural form ("" adds an s).
func Plural(n int64, one, plural string) string {
	if plural == "" {
		plural = one + "s"
	}
	switch n {
	case 0:
		return "no " + plural
	case 1:
		return "1 " + one
	}
	return Thousands(n) + " " + plural
}

// Thousands writes n with a comma between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Size says a number of bytes for people: "512 B", "4.1 KiB", "96 MiB".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	suffix := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}[i]
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, suffix)
	}
	return fmt.Sprintf("%.0f %s", v, suffix)
}

// clean makes text safe to print on a terminal: tabs become spaces, and
// control characters (escape sequences among them) and invalid UTF-8
// become U+FFFD, so that no log can drive the reader's terminal. Newlines
// are kept.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || r != '\n' && unicode.IsControl(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ") {
		if r == utf8.RuneError || r != '\n' && unicode.IsControl(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// wrap breaks text into lines of at most width columns, at spaces where it
// can; a word longer than width is cut. Newlines in text are kept; a
// trailing one is dropped.
func wrap(text string, width int) []string {
	width = max(width, 8)
	var out []string
	for para := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		para = strings.TrimRight(para, " ")
		if para == "" {
			out = append(out, "")
			continue
		}
		for para != "" {
			cut := columnOffset(para, width) // the first rune past the line
			if cut == len(para) {
				out = append(out, para)
				break
			}
			if sp := strings.LastIndexByte(para[:cut+1], ' '); sp > 0 {
				out = append(out, strings.TrimRight(para[:sp], " "))
				para = strings.TrimLeft(para[sp:], " ")
				continue
			}
			out = append(out, para[:cut])
			para = para[cut:]
		}
	}
	return out
}

// cut keeps s to width columns, ending in "…" when it was longer.
func cut(s string, width int) string {
	if columnOffset(s, width) == len(s) {
		return s
	}
	return s[:columnOffset(s, max(width-1, 0))] + "…"
}

// DisplayWidth is how many terminal columns s takes: East Asian wide
// characters and most emoji take two, combining marks none, other runes
// one.
func DisplayWidth(s string) int { return displayWidth(s) }

func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// columnOffset is the byte offset of the first rune of s that does not
// fit in width columns (len(s) when all of it fits).
func columnOffset(s string, width int) int {
	n := 0
	for off, r := range s {
		n += runeWidth(r)
		if n > width {
			return off
		}
	}
	return len(s)
}

// runeWidth is the columns r takes (a short table of the wide ranges of
// Unicode's East Asian Width; enough for a line never to overflow on
// CJK text).
func runeWidth(r rune) int {
	switch {
	case r < 0x300: // Latin, before the combining marks
		return 1
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B:
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
