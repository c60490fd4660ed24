//go:build !linux

package file

import "io/fs"

// sysIdentity adds nothing off Linux: a file is known by its size and
// modification time only (docs/design.md, "Opening without reading").
func sysIdentity(fs.FileInfo, *fileIdentity) {}
