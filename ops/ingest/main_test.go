package ingest_test

import (
	"testing"

	"github.com/sessionlog/sessionlog/internal/testkit/raceexit"
)

// TestMain quiets the race detector's exit in the processes the tests
// start (this test binary, re-executed as a child).
func TestMain(m *testing.M) { raceexit.Main(m) }
