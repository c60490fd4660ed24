package harness

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Summary is a series of per-run values reduced to its median and range.
type Summary struct {
	Median, Min, Max float64
	N                int // runs that produced a value
}

// Summarize returns the median, minimum and maximum of vs, ignoring NaNs
// (a run that produced no value). The median of an even count is the mean
// of the two middle values.
func Summarize(vs []float64) Summary {
	s := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Summary{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Format writes the summary as "median [min–max]" with f formatting each
// value; a single run is its value alone, and no run is "—".
func (s Summary) Format(f func(float64) string) string {
	switch {
	case s.N == 0:
		return "—"
	case s.N == 1 || s.Min == s.Max:
		return f(s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", f(s.Median), f(s.Min), f(s.Max))
}

// Ratios divides a[i] by b[i], run by run: the ratio of two variants
// measured in the same run. A missing or zero divisor gives NaN.
func Ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		if i >= len(b) || b[i] == 0 || math.IsNaN(b[i]) {
			out[i] = math.NaN()
			continue
		}
		out[i] = a[i] / b[i]
	}
	return out
}

// unit is a suffix for values of at least min, which are divided by min
// (or by div when set) before formatting.
type unit struct {
	min, div float64
	suffix   string
}

// withUnit formats v with the first unit whose min it reaches (units from
// the largest), or with last below them all.
func withUnit(v float64, units []unit, last func(float64) string) string {
	if math.IsNaN(v) {
		return "—"
	}
	for _, u := range units {
		if math.Abs(v) >= u.min {
			return sig(v/cmp.Or(u.div, u.min)) + u.suffix
		}
	}
	return last(v)
}

var (
	numberUnits   = []unit{{min: 1e9, suffix: " G"}, {min: 1e6, suffix: " M"}, {min: 1e4, div: 1e3, suffix: " k"}}
	bytesUnits    = []unit{{min: 1e9, suffix: " GB"}, {min: 1e6, suffix: " MB"}, {min: 1e3, suffix: " kB"}}
	durationUnits = []unit{{min: 1e9, suffix: " s"}, {min: 1e6, suffix: " ms"}, {min: 1e3, suffix: " µs"}}
)

// Number formats v with three significant digits and a k/M/G suffix past
// ten thousand: 1234567 → "1.23 M", 43210 → "43.2 k", 12.345 → "12.3".
func Number(v float64) string { return withUnit(v, numberUnits, sig) }

// Ratio formats a ratio as "1.23×".
func Ratio(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return sig(v) + "×"
}

// Bytes formats a byte count in decimal units: "8.39 MB".
func Bytes(v float64) string {
	return withUnit(v, bytesUnits, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " B" })
}

// Duration formats a duration given in nanoseconds: "335 µs", "1.20 ms".
func Duration(ns float64) string {
	return withUnit(ns, durationUnits, func(v float64) string { return sig(v) + " ns" })
}

// sig formats v with three significant digits, at most two decimals, and
// no exponent.
func sig(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
