package harness

import (
	"context"
	"os"
	"testing"
)

func TestZZMakeCLIFixtures(t *testing.T) {
	dir := os.Getenv("PERF2_FIXTURES")
	if dir == "" {
		t.Skip("PERF2_FIXTURES unset")
	}
	if err := prepareCLI(context.Background(), dir, []int64{1 << 20, 32 << 20}); err != nil {
		t.Fatal(err)
	}
}
