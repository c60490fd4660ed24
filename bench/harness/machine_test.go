package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n"
	require.Equal(t, "AMD EPYC 7B13", cpuModel([]byte(info)))
	require.Empty(t, cpuModel([]byte("processor : 0\n")))
}

func TestMountOf(t *testing.T) {
	mounts := "/dev/root / ext4 rw,relatime 0 0\n" +
		"tmpfs /tmp tmpfs rw,nosuid 0 0\n" +
		"/dev/vdb /tmp/disk xfs rw 0 0\n" +
		"/dev/vdc /tmpx btrfs rw 0 0\n" +
		"/dev/vdd /my\\040dir ext4 ro 0 0\n"
	tests := []struct{ path, want string }{
		{"/home/x", "ext4 on /dev/root (rw,relatime)"},
		{"/tmp", "tmpfs on tmpfs (rw,nosuid)"},
		{"/tmp/harness-1", "tmpfs on tmpfs (rw,nosuid)"},
		{"/tmp/disk/a", "xfs on /dev/vdb (rw)"},
		{"/tmpx/a", "btrfs on /dev/vdc (rw)"},
		{"/my dir/a", "ext4 on /dev/vdd (ro)"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			require.Equal(t, tt.want, mountOf([]byte(mounts), tt.path))
		})
	}
}

func TestParseBusy(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 5 50 1000 40 3 2 7 9 0\ncpu0 1 2 3 4 5 6 7 8\n"
	busy, ok := parseBusy([]byte(stat))
	require.True(t, ok)
	require.Equal(t, time.Duration(100+5+50+3+2+7)*10*time.Millisecond, busy)
	_, ok = parseBusy([]byte("intr 1 2 3\n"))
	require.False(t, ok)
}
