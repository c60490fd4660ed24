package main

import (
	"bytes"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"
	"github.com/stretchr/testify/require"

	"github.com/sessionlog/sessionlog/internal/testkit/faultfs"
)

// TestFailedImportLeavesNothing: an import that runs out of space while
// writing the session leaves nothing of it — no session, temp or lock file
// (regression: <ID>.lock was left behind) — and exits 2 (the environment).
func TestFailedImportLeavesNothing(t *testing.T) {
	mem := afero.NewMemMapFs()
	const src = "/src/01JDX3N0Q3Z8Y6W2D1V5K7M9PA.jsonl"
	require.NoError(t, afero.WriteFile(mem, src, []byte(
		`{"format":"sessionlog","version":1,"id":"01JDX3N0Q3Z8Y6W2D1V5K7M9PA","createdAt":1}`+"\n"+
			`{"seq":0,"type":"x","time":1,"data":null}`+"\n"), 0o600))
	fsys := faultfs.New(mem)
	fsys.SetHook(func(op faultfs.Op, name string) error {
		if op == faultfs.OpWrite && strings.HasPrefix(name, "/s/") && strings.Contains(name, ".jsonl") {
			return syscall.ENOSPC // the session's file, while it is built
		}
		return nil
	})
	var out, errOut bytes.Buffer
	code := runOn(t.Context(), fsys, []string{"--dir", "/s", "import", src}, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
	require.Equal(t, 2, code, errOut.String())
	require.Contains(t, errOut.String(), "no space left on device")
	var left []string
	require.NoError(t, afero.Walk(fsys, "/s", func(p string, fi fs.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && p != "/s/.cache/headers.json" {
			left = append(left, p)
		}
		return err
	}))
	require.Empty(t, left, "nothing of the session is left")
}
