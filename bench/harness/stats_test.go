package harness

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"odd count", []float64{3, 1, 2}, Summary{Median: 2, Min: 1, Max: 3, N: 3}},
		{"even count takes the mean of the middle two", []float64{4, 1, 2, 3}, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{"NaNs are runs without a value", []float64{nan, 5, nan, 7, 6}, Summary{Median: 6, Min: 5, Max: 7, N: 3}},
		{"one value", []float64{9}, Summary{Median: 9, Min: 9, Max: 9, N: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Summarize(tt.in))
		})
	}
	t.Run("no value", func(t *testing.T) {
		s := Summarize([]float64{nan})
		require.Zero(t, s.N)
		require.True(t, math.IsNaN(s.Median))
		require.Equal(t, "—", s.Format(Number))
	})
}

func TestSummaryFormat(t *testing.T) {
	tests := []struct {
		name string
		s    Summary
		want string
	}{
		{"range", Summary{Median: 43210, Min: 40000, Max: 1234567, N: 5}, "43.2 k [40.0 k–1.23 M]"},
		{"a single run has no range", Summary{Median: 2, Min: 2, Max: 2, N: 1}, "2.00"},
		{"equal values have no range", Summary{Median: 2, Min: 2, Max: 2, N: 3}, "2.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.s.Format(Number))
		})
	}
}

func TestRatiosAreTakenRunByRun(t *testing.T) {
	got := Ratios([]float64{10, 20, 30, 8}, []float64{5, 0, math.NaN()})
	require.Equal(t, 2.0, got[0])
	for i, v := range got[1:] {
		require.Truef(t, math.IsNaN(v), "run %d: a zero, NaN or missing divisor gives NaN, got %v", i+1, v)
	}
	// The median of per-run ratios is not the ratio of the medians.
	a, b := []float64{1, 10, 100}, []float64{1, 100, 10}
	require.Equal(t, 1.0, Summarize(Ratios(a, b)).Median)
}

func TestFormats(t *testing.T) {
	tests := []struct {
		name string
		f    func(float64) string
		in   float64
		want string
	}{
		{"number below 10k", Number, 8477, "8477"},
		{"number k", Number, 43210, "43.2 k"},
		{"number M", Number, 2_280_000, "2.28 M"},
		{"number small", Number, 0.4567, "0.46"},
		{"ratio", Ratio, 0.823, "0.82×"},
		{"bytes", Bytes, 8_386_828, "8.39 MB"},
		{"bytes small", Bytes, 48, "48 B"},
		{"duration µs", Duration, 334_000, "334 µs"},
		{"duration ms", Duration, 1_200_000, "1.20 ms"},
		{"NaN", Duration, math.NaN(), "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.f(tt.in))
		})
	}
}
