//go:build !linux || !(amd64 || arm64)

package file

import "github.com/spf13/afero"

// pathCheck is the fast check that a path still names a file, which
// exists on Linux (amd64, arm64) only; elsewhere the writer checks through
// the file system (fileBackend.inPlace).
type pathCheck struct{}

func newPathCheck(string, afero.File) *pathCheck { return nil }

func (*pathCheck) names() (bool, error) { return false, nil }
