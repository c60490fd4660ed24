//go:build linux

package handle

import "syscall"

const sysFstatat = syscall.SYS_NEWFSTATAT
