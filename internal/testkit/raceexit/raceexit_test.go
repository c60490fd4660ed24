package raceexit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuiet(t *testing.T) {
	for _, tc := range []struct{ before, after string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=250", "atexit_sleep_ms=250"},
	} {
		t.Setenv("GORACE", tc.before)
		Quiet()
		require.Equal(t, tc.after, os.Getenv("GORACE"))
	}
}
