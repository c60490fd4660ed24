package tracestest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// EnvVar names the environment variable that turns a missing traces folder
// from a skip into a failure: set it to "require".
const EnvVar = "SESSIONLOG_TRACES"

// Dir returns the absolute path of the traces folder, joined with elem. When
// the folder (or elem under it) is absent it skips t with a one-line reason,
// or fails t when SESSIONLOG_TRACES=require.
func Dir(t testing.TB, elem ...string) string {
	t.Helper()
	dir, err := locate(elem...)
	if err != nil {
		missing(t, err)
	}
	return dir
}

// Glob returns the files matching pattern under the traces folder; when none
// match it skips t, or fails it under SESSIONLOG_TRACES=require.
func Glob(t testing.TB, pattern string) []string {
	t.Helper()
	dir := Dir(t)
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatalf("tracestest: bad pattern %q: %v", pattern, err)
	}
	if len(files) == 0 {
		missing(t, fmt.Errorf("no traces match %s", filepath.Join(dir, pattern)))
	}
	return files
}

func missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(EnvVar) == "require" {
		t.Fatalf("%v (%s=require: the real traces must be beside the repository)", err, EnvVar)
	}
	t.Skipf("skipped: %v (real traces absent; set %s=require to fail instead)", err, EnvVar)
}

func locate(elem ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(append([]string{filepath.Dir(root), "shared", "traces"}, elem...)...)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no real traces at %s", dir)
	}
	return dir, nil
}

// repoRoot is the folder of the repository's go.mod above the working
// directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/sessionlog/sessionlog\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/sessionlog/sessionlog above the working directory")
		}
		dir = parent
	}
}
