//go:build !unix

package file

// openRegular relies on its checks before and after the open here: these
// systems have neither flag.
const (
	openNoFollow = 0
	openNonBlock = 0
)

func isLinkRefused(error) bool { return false }
