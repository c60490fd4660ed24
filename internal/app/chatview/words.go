package chatview

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
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

// Duration says d for people in its two largest units, as a reader
// weighs it: "850ms", "12.3s", "5m 12s", "3h 5m", "204d 9h" (never
// "4905h11m17.608s").
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return twoUnits(d, time.Minute, "m", time.Second, "s")
	case d < day:
		return twoUnits(d, time.Hour, "h", time.Minute, "m")
	}
	return twoUnits(d, day, "d", time.Hour, "h")
}

// twoUnits says d as whole big units and whole small ones, the second
// left out when it is none: "5m 12s", "3h".
func twoUnits(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	n, rest := d/big, (d%big)/small
	if rest == 0 {
		return fmt.Sprintf("%d%s", n, bigName)
	}
	return fmt.Sprintf("%d%s %d%s", n, bigName, rest, smallName)
}

// Ago says how long before now the Unix milliseconds ms were, in one
// short word: "now", "45s ago", "5m ago", "3h ago", "4d ago", "5mo ago",
// "2y ago"; "in 3h" for a time after now (a writer's clock ahead).
func Ago(now time.Time, ms int64) string {
	d := now.Sub(time.UnixMilli(ms))
	if d <= -time.Second {
		return "in " + strings.TrimSuffix(Ago(now.Add(-2*d), ms), " ago")
	}
	const day = 24 * time.Hour
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", d/time.Minute)
	case d < day:
		return fmt.Sprintf("%dh ago", d/time.Hour)
	case d < 60*day:
		return fmt.Sprintf("%dd ago", d/day)
	case d < 365*day:
		return fmt.Sprintf("%dmo ago", min(d/(30*day), 11))
	}
	return fmt.Sprintf("%dy ago", d/(365*day))
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

// runeWidth is the columns r takes on a terminal: none for a combining
// mark, a format character or a zero-width space; two for what Unicode's
// East Asian Width calls wide or fullwidth (CJK, most emoji); one for the
// rest, ambiguous ones included (as terminals outside East Asia draw them).
func runeWidth(r rune) int {
	switch {
	case r < 0x300: // Latin, before the combining marks
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
