package harness

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run happened.
type Machine struct {
	CPU    string // model name of the first CPU in /proc/cpuinfo
	Cores  int    // runtime.NumCPU
	Kernel string // /proc/sys/kernel/osrelease
	FS     string // file system type, device and options of the folder measured
	Go     string // runtime.Version, GOOS/GOARCH
}

// ReadMachine describes this machine, with the file system that holds dir.
// What cannot be read is left empty.
func ReadMachine(dir string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(b)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		if abs, err := filepath.Abs(dir); err == nil {
			if r, err := filepath.EvalSymlinks(abs); err == nil {
				abs = r
			}
			m.FS = mountOf(b, abs)
		}
	}
	return m
}

// cpuModel returns the first "model name" of a /proc/cpuinfo.
func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mountOf returns "type on device (options)" of the mount in a
// /proc/self/mounts that holds path: the longest mount point that is path
// or one of its parents.
func mountOf(mounts []byte, path string) string {
	best, bestLen := "", -1
	sc := bufio.NewScanner(bytes.NewReader(mounts))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		dev, point, typ, opts := f[0], unescapeMount(f[1]), f[2], f[3]
		if !within(path, point) || len(point) <= bestLen {
			continue
		}
		best, bestLen = typ+" on "+dev+" ("+opts+")", len(point)
	}
	return best
}

// within reports whether path is point or below it.
func within(path, point string) bool {
	if point == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == point || strings.HasPrefix(path, point+"/")
}

// unescapeMount undoes the octal escapes of /proc/self/mounts (\040 for a
// space, \011, \012, \134).
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// LoadAvg returns the 1, 5 and 15-minute load averages of /proc/loadavg
// as written there ("1.52 1.31 0.98"), or "" when it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// machineBusy returns the CPU time all CPUs spent busy (neither idle nor
// waiting for I/O) since boot, from the first line of /proc/stat, in its
// clock ticks (USER_HZ, 100 a second on Linux).
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	return parseBusy(b)
}

// parseBusy reads the "cpu" line of a /proc/stat: user nice system idle
// iowait irq softirq steal …, in ticks of 10 ms.
func parseBusy(stat []byte) (time.Duration, bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	for i, s := range f[1:] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		if i != 3 && i != 4 && i < 8 { // not idle, not iowait; guest time is already in user
			busy += v
		}
	}
	return time.Duration(busy) * 10 * time.Millisecond, true
}
