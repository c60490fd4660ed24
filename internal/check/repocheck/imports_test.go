package repocheck

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProductImportsNoExampleOrCommand: the logtool binary links no
// package of examples/ (the demo's loop is internal/app/agentloop), and no
// library package imports a command: serve's server, internal/app/web, prints
// the library's reports itself.
func TestProductImportsNoExampleOrCommand(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	deps := func(pkgs ...string) []string {
		cmd := exec.Command("go", append([]string{"list", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...)
		cmd.Dir = repoRoot(t)
		out, err := cmd.Output()
		require.NoError(t, err)
		return strings.Fields(string(out))
	}
	for _, p := range deps("./cmd/logtool") {
		require.False(t, strings.HasPrefix(p, modulePath+"/examples/"), "logtool links %s", p)
	}
	for _, p := range deps("./internal/app/web", "./internal/app/chatview", "./ops/inspect", "./ops/verify") {
		require.False(t, strings.HasPrefix(p, modulePath+"/cmd/"), "a library package links %s", p)
	}
}
