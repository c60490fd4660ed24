package chatview

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Millisecond, "1ms"},
		{850 * time.Millisecond, "850ms"},
		{1234 * time.Millisecond, "1.2s"},
		{12*time.Second + 300*time.Millisecond, "12s"},
		{5*time.Minute + 12*time.Second, "5m 12s"},
		{5 * time.Minute, "5m"},
		{3*time.Hour + 5*time.Minute + 59*time.Second, "3h 5m"},
		{4905*time.Hour + 11*time.Minute + 17608*time.Millisecond, "204d 9h"}, // issue 25's "4905h11m17.608s"
		{-90 * time.Second, "-1m 30s"},
	} {
		require.Equal(t, tc.want, Duration(tc.d), "%v", tc.d)
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		before time.Duration
		want   string
	}{
		{0, "now"},
		{45 * time.Second, "45s ago"},
		{5 * time.Minute, "5m ago"},
		{3 * time.Hour, "3h ago"},
		{4 * 24 * time.Hour, "4d ago"},
		{150 * 24 * time.Hour, "5mo ago"},
		{364 * 24 * time.Hour, "11mo ago"},
		{800 * 24 * time.Hour, "2y ago"},
		{-3 * time.Hour, "in 3h"},
	} {
		require.Equal(t, tc.want, Ago(now, now.Add(-tc.before).UnixMilli()), "%v", tc.before)
	}
}

// Display width comes from Unicode's East Asian Width (x/text/width):
// wide and fullwidth take two columns, halfwidth and ambiguous one,
// combining marks and format characters none.
func TestDisplayWidth(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"abc", 3},
		{"日本語", 6},
		{"한국", 4},
		{"ｱｲ", 2},       // halfwidth katakana
		{"ＡＢ", 4},       // fullwidth Latin
		{"🙂", 2},        // emoji, wide
		{"e\u0301", 1},  // a combining accent
		{"a\u200bb", 2}, // a zero-width space
		{"─│", 2},       // box drawing: ambiguous, one column
		{"ü", 1},
	} {
		require.Equal(t, tc.want, DisplayWidth(tc.s), "%q", tc.s)
	}
	require.Equal(t, "日本…", cut("日本語です", 5))
}
