//go:build unix

package file

import (
	"errors"
	"syscall"
)

// Flags openRegular adds on an OS file system.
const (
	openNoFollow = syscall.O_NOFOLLOW
	openNonBlock = syscall.O_NONBLOCK
)

// isLinkRefused reports whether an open failed because O_NOFOLLOW met a
// symbolic link (ELOOP; EMLINK on some BSDs).
func isLinkRefused(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
