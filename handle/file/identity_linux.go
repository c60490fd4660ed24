//go:build linux

package file

import (
	"io/fs"
	"syscall"
)

// sysIdentity adds what Linux tells of a file beyond its size and
// modification time: its device, inode and change time (which every write
// and every metadata change sets, and no program can set back).
func sysIdentity(fi fs.FileInfo, id *fileIdentity) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	id.Dev, id.Ino = uint64(st.Dev), st.Ino
	id.CTime = st.Ctim.Nano()
}
